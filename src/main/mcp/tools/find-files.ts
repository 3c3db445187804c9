/**
 * `find_files(workdir, pattern, path, limit)` (docs/mcp-tools.md#find_files): regular files below a
 * directory whose basename matches a glob, in walk order, bounded by `limit + 1` matches and by
 * `max_walk_entries` entries visited. The walk is a heavy call, its parts run on the walk pool's threads.
 */
import * as v from "valibot";
import { type McpDeps, readTarget, treeTarget } from "../deps.ts";
import { nonEmptyTextParam, pathParam, searchLimitParam, withDefault, workdirParam } from "../params.ts";
import { defineTool, READ_ONLY } from "../tool.ts";

const Output = v.strictObject({
  matches: v.array(v.strictObject({ path: v.string() })),
  returned: v.number(),
  truncated: v.boolean(),
});

export const findFiles = (deps: McpDeps) => {
  const { max_search_results, max_walk_entries } = deps.config.limits;
  return defineTool({
    name: "find_files",
    title: "Find files by name",
    description:
      "Find regular files below a directory whose name (basename, case-sensitive) matches a glob such as *compose*.yml (* any run, ? one character, [a-z] classes). Symlinks are never entered.",
    annotations: READ_ONLY,
    input: v.strictObject({
      workdir: workdirParam(),
      pattern: nonEmptyTextParam("A glob matched against each file's whole basename, case-sensitive: * any run, ? one character, [a-z] a class."),
      path: withDefault(pathParam("The directory to search below."), ""),
      limit: searchLimitParam(`The most matches to return; the walk also stops after max_walk_entries (${max_walk_entries}) entries.`, deps.config.limits),
    }),
    output: Output,
    bulk: ["matches"],
    unexpected: "READ_FAILED",
    async run(args, call) {
      const target = treeTarget(readTarget(deps, call.audit, args.workdir, args.path));
      const job = { target, pattern: args.pattern, limit: Math.min(args.limit, max_search_results), maxEntries: max_walk_entries };
      const limits = { limit: job.limit, maxEntries: max_walk_entries };
      const { matches, truncated } = await deps.heavy.walkParts({ signal: call.signal }, limits, (api, part, stop) => api.findPart(job, part, stop));
      call.audit["returned"] = matches.length;
      call.audit["truncated"] = truncated;
      return { matches, returned: matches.length, truncated };
    },
  });
};
