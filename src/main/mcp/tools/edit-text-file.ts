/**
 * `edit_text_file(workdir, path, expected_revision, edits)` (docs/mcp-tools.md#edit_text_file): literal edits of
 * one UTF-8 text file, all or nothing, committed by atomic replace. The BOM is hidden from matching
 * and kept; line endings are matched and kept literally.
 */
import { readSync } from "node:fs";
import * as v from "valibot";
import { ServerFsError } from "../../../shared/errors.ts";
import { closeQuietly } from "../../../shared/fs/dir-handle.ts";
import { revisionOf } from "../../../shared/fs/stat.ts";
import { BOM, byteLength, decodeStrict, hasBom } from "../../../shared/utf8.ts";
import type { McpDeps } from "../deps.ts";
import { publishReplacement } from "../mutation/atomic-publish.ts";
import { runMutation } from "../mutation/pipeline.ts";
import { openReplaceTarget } from "../mutation/replace-target.ts";
import { applyEdits } from "../mutation/text-edits.ts";
import { intParam, nonEmptyListParam, pathParam, revisionParam, textParam, withDefault, workdirParam } from "../params.ts";
import { defineTool } from "../tool.ts";

const Edit = v.strictObject({
  old_text: textParam('The exact text to find (no regex); "" only on an empty file.'),
  new_text: textParam("The text that replaces every occurrence of old_text (no NUL)."),
  expected_count: withDefault(intParam("How many times old_text must occur, else EDIT_CONFLICT and nothing changes.", { min: 1 }), 1),
});

const Output = v.strictObject({
  workdir: v.string(),
  path: v.string(),
  edited: v.literal(true),
  edits_applied: v.number(),
  bytes_before: v.number(),
  bytes_after: v.number(),
  revision_before: v.string(),
  revision: v.string(),
});

/** Reads at most `size` bytes; a file that changes meanwhile fails the revision re-check later. */
function readBody(fd: number, size: number): Buffer {
  const buf = Buffer.alloc(size);
  let got = 0;
  while (got < size) {
    const n = readSync(fd, buf, got, size - got, got);
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got);
}

export const editTextFile = (deps: McpDeps) =>
  defineTool({
    name: "edit_text_file",
    title: "Edit a text file",
    description:
      "Apply literal find-and-replace edits to a UTF-8 text file (read-write workdirs only). Each edit replaces every occurrence of old_text and must match exactly expected_count times. Needs the file's current revision from read_text_file or stat_file; all edits apply or none.",
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    input: v.strictObject({
      workdir: workdirParam(),
      path: pathParam("The existing UTF-8 text file to edit."),
      expected_revision: revisionParam("read_text_file or stat_file"),
      edits: nonEmptyListParam(
        Edit,
        `Literal replacements applied in order, each to the text the previous one left; all apply or none. At most max_edits_per_call (${deps.config.limits.max_edits_per_call}), else TOO_MANY_EDITS.`,
      ),
    }),
    output: Output,
    unexpected: "MUTATION_FAILED",
    run(args, call) {
      const { edits } = args;
      return runMutation(deps, call, {
        tool: "edit_text_file",
        workdir: args.workdir,
        path: args.path,
        checkArguments({ ws, where }) {
          if (edits.length > deps.config.limits.max_edits_per_call) {
            throw new ServerFsError("TOO_MANY_EDITS", `${where} more edits than max_edits_per_call`);
          }
          const textBytes = edits.reduce((sum, e) => sum + byteLength(e.old_text) + byteLength(e.new_text), 0);
          if (textBytes > ws.policy.max_write_bytes) throw new ServerFsError("WRITE_TOO_LARGE", `${where} the edit texts exceed max_write_bytes`);
          if (edits.some((e) => e.new_text.includes("\0"))) {
            throw new ServerFsError("BINARY_CONTENT_NOT_ALLOWED", `${where} new_text contains a NUL character`);
          }
        },
        commit(scope) {
          const { where } = scope;
          const max = scope.ws.policy.max_write_bytes;
          return scope.inParent("PATH_NOT_FOUND", async (dirFd, name) => {
            const target = openReplaceTarget(dirFd, name, args.expected_revision, where);
            try {
              if (target.st.size > BigInt(max)) throw new ServerFsError("WRITE_TOO_LARGE", `${where} the file exceeds max_write_bytes`);
              const body = readBody(target.fd, Number(target.st.size));
              if (body.includes(0)) throw new ServerFsError("BINARY_FILE", `${where} is a binary file and cannot be edited`);
              const bom = hasBom(body);
              const text = decodeStrict(bom ? body.subarray(BOM.length) : body);
              if (text === null) throw new ServerFsError("UNSUPPORTED_TEXT_ENCODING", `${where} is not valid UTF-8`);
              const edited = Buffer.from(applyEdits(text, edits, where), "utf8");
              const after = bom ? Buffer.concat([BOM, edited]) : edited;
              if (after.length > max) throw new ServerFsError("WRITE_TOO_LARGE", `${where} the edited file would exceed max_write_bytes`);
              const st = await publishReplacement(dirFd, name, target, after, args.expected_revision, scope);
              const revision = revisionOf(st);
              Object.assign(call.audit, { edit_count: edits.length, bytes_before: body.length, bytes_after: after.length, revision });
              return {
                workdir: scope.ws.alias,
                path: scope.path,
                edited: true,
                edits_applied: edits.length,
                bytes_before: body.length,
                bytes_after: after.length,
                revision_before: args.expected_revision,
                revision,
              };
            } finally {
              closeQuietly(target.fd);
            }
          });
        },
      });
    },
  });
