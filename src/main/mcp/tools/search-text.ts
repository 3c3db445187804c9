/**
 * `search_text(workdir, query, path, glob, case_sensitive, limit)` (mcp-surface.md §5.4): a literal
 * search, in-process, over the files of a walk. It stops at `limit + 1` hits, fails whole with
 * SEARCH_TIMEOUT past `search_timeout_seconds`, and pauses regularly so the deadline and stdin EOF
 * are noticed. The query is never logged or echoed.
 */
import * as v from "valibot";
import { ServerFsError } from "../../../shared/errors.ts";
import { closeQuietly, openDirPath } from "../../../shared/fs/dir-handle.ts";
import { type McpDeps, readTarget } from "../deps.ts";
import { LiteralSearch } from "../fs/literal-search.ts";
import { Pacer } from "../fs/pacer.ts";
import { SearchFileReader } from "../fs/search-file-reader.ts";
import { searchGlob } from "../fs/search-glob.ts";
import { walkFiles } from "../fs/walk.ts";
import { defineTool, intParam, READ_ONLY } from "../tool.ts";

/** Never entered below the search directory, even with hidden paths allowed. */
const VCS_DIRS = new Set([".git", ".hg", ".svn"]);

const Hit = v.strictObject({ path: v.string(), line: v.number(), text: v.string(), text_truncated: v.boolean() });

const Output = v.strictObject({
  matches: v.array(Hit),
  returned: v.number(),
  truncated: v.boolean(),
});

export const searchText = (deps: McpDeps) => {
  const { default_search_results, max_search_results, search_timeout_seconds, search_max_file_bytes } = deps.config.limits;
  return defineTool({
    name: "search_text",
    title: "Search text",
    description:
      "Search files below a directory for a literal string (no regex; one line). Returns one hit per matching line: path, 1-based line and the line's text. Optional glob (basename, or path below the search directory when it has a /; a leading ! excludes). Binary files are skipped.",
    annotations: READ_ONLY,
    input: v.strictObject({
      workdir: v.string(),
      query: v.pipe(v.string(), v.minLength(1), v.regex(/^[^\n]*$/)),
      path: v.optional(v.string(), ""),
      glob: v.optional(v.nullable(v.string()), null),
      case_sensitive: v.optional(v.boolean(), true),
      limit: v.optional(intParam(1), Math.min(default_search_results, max_search_results)),
    }),
    output: Output,
    unexpected: "SEARCH_FAILED",
    async run(args, call) {
      const started = performance.now();
      const { ws, path, segments, where } = readTarget(deps, call.audit, args.workdir, args.path);
      const limit = Math.min(args.limit, max_search_results);
      const glob = searchGlob(args.glob);
      const search = new LiteralSearch(args.query, args.case_sensitive);
      const reader = new SearchFileReader(search_max_file_bytes, where);
      const pacer = new Pacer({
        signal: call.signal,
        deadline: {
          at: started + search_timeout_seconds * 1000,
          error: () => new ServerFsError("SEARCH_TIMEOUT", `${where} search exceeded search_timeout_seconds`),
        },
      });
      const matches: v.InferOutput<typeof Hit>[] = [];
      const fd = openDirPath(ws.realRoot, segments, { where, side: "read" });
      try {
        const walk = {
          policy: ws.pathPolicy,
          where,
          basePath: path,
          enters: (name: string, rel: string) => !VCS_DIRS.has(name) && glob.entersDir(name, rel),
        };
        for (const file of walkFiles(fd, walk, { entries: 0, capped: false })) {
          if (pacer.due()) await pacer.pause();
          if (!glob.admitsFile(file.name, file.rel)) continue;
          const content = reader.read(file.dirFd, file.name);
          if (content === null) continue;
          const hits = search.scan(content, limit + 1 - matches.length);
          // Defence in depth: the walk pruned already, but no hit leaves without its own check.
          if (hits.length === 0 || ws.pathPolicy.refusal(file.path.split("/")) !== null) continue;
          for (const hit of hits) matches.push({ path: file.path, ...hit });
          if (matches.length > limit) break;
        }
      } finally {
        closeQuietly(fd);
      }
      const result = matches.slice(0, limit);
      const truncated = matches.length > limit;
      call.audit["returned"] = result.length;
      call.audit["truncated"] = truncated;
      return { matches: result, returned: result.length, truncated };
    },
  });
};
