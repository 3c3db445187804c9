/**
 * `search_text(workdir, query, path, glob, case_sensitive, limit)` (docs/mcp-tools.md#search_text): a literal
 * search, in-process, over the files of a walk, its parts run on the walk pool's threads. It stops at `limit + 1`
 * hits and fails whole with SEARCH_TIMEOUT once `search_timeout_seconds` have passed since the call
 * began, time spent waiting for the pool included. The query is never logged or echoed.
 */
import * as v from "valibot";
import { ServerFsError } from "../../../shared/errors.ts";
import { type McpDeps, readTarget, treeTarget } from "../deps.ts";
import { flagParam, nonEmptyTextParam, nullableTextParam, ONE_LINE, pathParam, searchLimitParam, withDefault, workdirParam } from "../params.ts";
import { defineTool, READ_ONLY } from "../tool.ts";

const Hit = v.strictObject({ path: v.string(), line: v.number(), text_truncated: v.boolean(), text: v.string() });

const Output = v.strictObject({
  matches: v.array(Hit),
  returned: v.number(),
  truncated: v.boolean(),
});

export const searchText = (deps: McpDeps) => {
  const { max_search_results, search_timeout_seconds, search_max_file_bytes } = deps.config.limits;
  return defineTool({
    name: "search_text",
    title: "Search text",
    description:
      "Search files below a directory for a literal string (no regex; one line). Returns one hit per matching line: path, 1-based line and the line's text. Optional glob (basename, or path below the search directory when it has a /; a leading ! excludes). Binary files are skipped.",
    annotations: READ_ONLY,
    input: v.strictObject({
      workdir: workdirParam(),
      query: nonEmptyTextParam("The literal text to find (never a regex).", ONE_LINE),
      path: withDefault(pathParam("The directory to search below."), ""),
      glob: withDefault(
        nullableTextParam(
          'Only files matching this glob: without a / it matches the basename, with one the path below the search directory (** any number of segments); a leading ! excludes instead. null or "" searches every file.',
        ),
        null,
      ),
      case_sensitive: withDefault(flagParam("false matches regardless of case (Unicode simple case folding)."), true),
      limit: searchLimitParam(
        `The most hits (matching lines) to return; the search fails with SEARCH_TIMEOUT after ${search_timeout_seconds} seconds.`,
        deps.config.limits,
      ),
    }),
    output: Output,
    bulk: ["matches"],
    unexpected: "SEARCH_FAILED",
    async run(args, call) {
      const started = performance.now();
      const target = treeTarget(readTarget(deps, call.audit, args.workdir, args.path));
      const where = target.where;
      const job = {
        target,
        query: args.query,
        glob: args.glob,
        caseSensitive: args.case_sensitive,
        limit: Math.min(args.limit, max_search_results),
        maxFileBytes: search_max_file_bytes,
      };
      const deadline = {
        at: started + search_timeout_seconds * 1000,
        error: () => new ServerFsError("SEARCH_TIMEOUT", `${where} search exceeded search_timeout_seconds`),
      };
      const limits = { limit: job.limit, maxEntries: Number.POSITIVE_INFINITY };
      const { matches, truncated } = await deps.heavy.walkParts({ signal: call.signal, deadline }, limits, (api, part, stop) =>
        api.searchPart(job, part, stop),
      );
      call.audit["returned"] = matches.length;
      call.audit["truncated"] = truncated;
      return { matches, returned: matches.length, truncated };
    },
  });
};
