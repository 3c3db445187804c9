/**
 * `read_text_file(workdir, path, start_line, max_lines)` (docs/mcp-tools.md#read_text_file): one page of whole
 * lines of a UTF-8 text file, with the revision that edits and deletes need. A read that must seek
 * to its start line is a heavy call (docs/reliability.md, "Hardening"); a read from line 1 is not.
 */
import * as v from "valibot";
import type { Workspace } from "../../../shared/workspace.ts";
import { type McpDeps, requireWorkspace } from "../deps.ts";
import { readTextPage } from "../fs/text-page.ts";
import { intParam, pathParam, withDefault, workdirParam } from "../params.ts";
import { defineTool, READ_ONLY } from "../tool.ts";

const Output = v.strictObject({
  workdir: v.string(),
  path: v.string(),
  start_line: v.number(),
  end_line: v.number(),
  content: v.string(),
  bytes_returned: v.number(),
  has_more: v.boolean(),
  next_start_line: v.nullable(v.number()),
  revision: v.string(),
});

/** A per-workdir limit in words: its value, or its range when workdirs differ. */
function acrossWorkdirs(deps: McpDeps, limit: (p: Workspace["policy"]) => number): string {
  const values = deps.workspaces.list.map((w) => limit(w.policy));
  const [low, high] = [Math.min(...values), Math.max(...values)];
  return low === high ? `${low}` : `${low} to ${high}, by workdir`;
}

export const readTextFile = (deps: McpDeps) =>
  defineTool({
    name: "read_text_file",
    title: "Read a text file",
    description:
      "Read whole lines of a UTF-8 text file from start_line (1-based), up to max_lines and the workdir's byte budget. Returns the content, has_more / next_start_line for paging, and the revision needed by edit_text_file and delete_file.",
    annotations: READ_ONLY,
    input: v.strictObject({
      workdir: workdirParam(),
      path: pathParam("The regular file to read."),
      start_line: withDefault(intParam("The first line to return, 1-based.", { min: 1 }), 1),
      max_lines: withDefault(
        intParam(
          `The most lines to return; a page also ends before the workdir's max_read_bytes (${acrossWorkdirs(deps, (p) => p.max_read_bytes)} bytes) would be exceeded.`,
          { min: 1, cap: `the workdir's max_read_lines (${acrossWorkdirs(deps, (p) => p.max_read_lines)})` },
        ),
        200,
      ),
    }),
    output: Output,
    bulk: ["content"],
    unexpected: "READ_FAILED",
    async run(args, call) {
      const ws = requireWorkspace(deps, args.workdir);
      const target = ws.confine(args.path);
      call.audit["path"] = target.path;
      const read = () =>
        readTextPage(ws, target, {
          startLine: args.start_line,
          maxLines: Math.min(args.max_lines, ws.policy.max_read_lines),
          maxBytes: ws.policy.max_read_bytes,
          whole: false,
          maxScanBytes: deps.config.limits.max_scan_bytes,
          signal: call.signal,
        });
      const page = args.start_line === 1 ? await read() : await deps.heavy.run({ signal: call.signal }, read);
      call.audit["bytes_returned"] = page.bytes_returned;
      call.audit["start_line"] = page.start_line;
      call.audit["end_line"] = page.end_line;
      call.audit["has_more"] = page.has_more;
      return { workdir: ws.alias, path: target.path, ...page };
    },
  });
