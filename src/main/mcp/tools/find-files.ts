/**
 * `find_files(workdir, pattern, path, limit)` (mcp-surface.md §5.3): regular files below a
 * directory whose basename matches a glob, in walk order, bounded by `limit + 1` matches and by
 * `max_walk_entries` entries visited.
 */
import * as v from "valibot";
import { closeQuietly, openDirPath } from "../../../shared/fs/dir-handle.ts";
import { globMatcher } from "../../../shared/path/glob.ts";
import { type McpDeps, readTarget } from "../deps.ts";
import { Pacer } from "../fs/pacer.ts";
import { walkFiles, type WalkStats } from "../fs/walk.ts";
import { defineTool, intParam, READ_ONLY } from "../tool.ts";

const Output = v.strictObject({
  matches: v.array(v.strictObject({ path: v.string() })),
  returned: v.number(),
  truncated: v.boolean(),
});

export const findFiles = (deps: McpDeps) => {
  const { default_search_results, max_search_results, max_walk_entries } = deps.config.limits;
  return defineTool({
    name: "find_files",
    title: "Find files by name",
    description:
      "Find regular files below a directory whose name (basename, case-sensitive) matches a glob such as *compose*.yml (* any run, ? one character, [a-z] classes). Symlinks are never entered.",
    annotations: READ_ONLY,
    input: v.strictObject({
      workdir: v.string(),
      pattern: v.pipe(v.string(), v.minLength(1)),
      path: v.optional(v.string(), ""),
      limit: v.optional(intParam(1), Math.min(default_search_results, max_search_results)),
    }),
    output: Output,
    unexpected: "READ_FAILED",
    async run(args, call) {
      const { ws, path, segments, where } = readTarget(deps, call.audit, args.workdir, args.path);
      const limit = Math.min(args.limit, max_search_results);
      const matches = globMatcher(args.pattern, { crossSlash: false });
      const pacer = new Pacer({ signal: call.signal });
      const stats: WalkStats = { entries: 0, capped: false };
      const found: { path: string }[] = [];
      const fd = openDirPath(ws.realRoot, segments, { where, side: "read" });
      try {
        const walk = { policy: ws.pathPolicy, where, basePath: path, maxEntries: max_walk_entries };
        for (const file of walkFiles(fd, walk, stats)) {
          if (matches(file.name)) {
            found.push({ path: file.path });
            if (found.length > limit) break;
          }
          if (pacer.due()) await pacer.pause();
        }
      } finally {
        closeQuietly(fd);
      }
      const result = found.slice(0, limit);
      const truncated = found.length > limit || stats.capped;
      call.audit["returned"] = result.length;
      call.audit["truncated"] = truncated;
      return { matches: result, returned: result.length, truncated };
    },
  });
};
