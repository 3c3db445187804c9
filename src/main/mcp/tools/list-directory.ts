/**
 * `list_directory(workdir, path, offset, limit)` (docs/mcp-tools.md#list_directory): one page of a directory's
 * admitted entries in byte order, each stat-ed without following links. A directory whose own size
 * says it holds more than a few thousand entries is listed as a heavy call in the walk pool, so a
 * high `offset` in a huge directory never holds up other calls.
 */
import { fstatSync } from "node:fs";
import * as v from "valibot";
import { withDir } from "../../../shared/fs/dir-handle.ts";
import { type ListPage, listPage } from "../../../workers/walk/list-job.ts";
import { type McpDeps, readTarget, treeTarget } from "../deps.ts";
import { intParam, pathParam, withDefault, workdirParam } from "../params.ts";
import { defineTool, READ_ONLY } from "../tool.ts";
import { ENTRY_STAT } from "./entry-stat.ts";

/**
 * A directory's `st_size` grows with its entries (ext4: about 24 bytes each, tmpfs: 20); up to this
 * many bytes (a few thousand entries, milliseconds of work) it is listed inline.
 */
const INLINE_DIR_BYTES = 64 * 1024;

const Entry = v.strictObject({
  name: v.string(),
  path: v.string(),
  ...ENTRY_STAT,
});

const Output = v.strictObject({
  workdir: v.string(),
  path: v.string(),
  entries: v.array(Entry),
  offset: v.number(),
  limit: v.number(),
  returned: v.number(),
  has_more: v.boolean(),
});

export const listDirectory = (deps: McpDeps) => {
  const { default_list_limit, max_list_entries } = deps.config.limits;
  return defineTool({
    name: "list_directory",
    title: "List a directory",
    description:
      "List one page of a directory's entries (name, path, type, size, modified_at), sorted by name. Hidden, reserved and denied entries are left out; symlinks are reported, never followed.",
    annotations: READ_ONLY,
    input: v.strictObject({
      workdir: workdirParam(),
      path: withDefault(pathParam("The directory to list."), ""),
      offset: withDefault(intParam("How many entries to skip, for the next page: the previous offset plus returned.", { min: 0 }), 0),
      limit: withDefault(
        intParam("The most entries to return.", { min: 1, cap: `max_list_entries (${max_list_entries})` }),
        Math.min(default_list_limit, max_list_entries),
      ),
    }),
    output: Output,
    bulk: ["entries"],
    unexpected: "READ_FAILED",
    async run(args, call) {
      const t = readTarget(deps, call.audit, args.workdir, args.path);
      const job = { target: treeTarget(t), offset: args.offset, limit: Math.min(args.limit, max_list_entries) };
      const inline = withDir(t.ws.realRoot, t.segments, { where: t.where, side: "read" }, (fd): ListPage | null =>
        fstatSync(fd).size <= INLINE_DIR_BYTES ? listPage(fd, t.path, t.ws.pathPolicy, job, null) : null,
      );
      const page = inline ?? (await deps.heavy.walk({ signal: call.signal }, (api, stop) => api.runListJob(job, stop)));
      call.audit["returned"] = page.entries.length;
      call.audit["has_more"] = page.hasMore;
      return {
        workdir: t.ws.alias,
        path: t.path,
        entries: page.entries,
        offset: args.offset,
        limit: job.limit,
        returned: page.entries.length,
        has_more: page.hasMore,
      };
    },
  });
};
