/**
 * `delete_file(workdir, path, expected_revision)` (docs/mcp-tools.md#delete_file): removes one regular file,
 * text or binary, only in the exact state the client saw. A symlink is never removed or followed.
 */
import { unlinkSync } from "node:fs";
import * as v from "valibot";
import { at, closeQuietly } from "../../../shared/fs/dir-handle.ts";
import { osError } from "../../../shared/fs/os-errors.ts";
import type { McpDeps } from "../deps.ts";
import { openExistingFile } from "../mutation/existing-file.ts";
import { requireRevision, requireRevisionByName } from "../mutation/expected-revision.ts";
import { runMutation } from "../mutation/pipeline.ts";
import { pathParam, revisionParam, workdirParam } from "../params.ts";
import { defineTool } from "../tool.ts";

const Output = v.strictObject({
  workdir: v.string(),
  path: v.string(),
  deleted: v.literal(true),
  bytes_deleted: v.number(),
  revision_deleted: v.string(),
});

export const deleteFile = (deps: McpDeps) =>
  defineTool({
    name: "delete_file",
    title: "Delete a file",
    description:
      "Permanently delete one regular file (read-write workdirs only). Needs the file's current revision from stat_file or read_text_file; symlinks, directories and special files are refused.",
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    input: v.strictObject({
      workdir: workdirParam(),
      path: pathParam("The regular file to delete."),
      expected_revision: revisionParam("stat_file or read_text_file"),
    }),
    output: Output,
    unexpected: "MUTATION_FAILED",
    run(args, call) {
      return runMutation(deps, call, {
        tool: "delete_file",
        workdir: args.workdir,
        path: args.path,
        commit(scope) {
          const { where } = scope;
          return scope.exclusive(() => scope.inParent("PATH_NOT_FOUND", (dirFd, name) => {
            const file = openExistingFile(dirFd, name, where, "mutation");
            try {
              requireRevision(file.st, args.expected_revision, where);
            } finally {
              closeQuietly(file.fd);
            }
            requireRevisionByName(dirFd, name, args.expected_revision, where);
            try {
              unlinkSync(at(dirFd, name));
            } catch (e) {
              throw osError(e, "mutation", where);
            }
            scope.syncDirectory(dirFd);
            const bytes = Number(file.st.size);
            Object.assign(call.audit, { bytes_deleted: bytes, revision: args.expected_revision });
            return { workdir: scope.ws.alias, path: scope.path, deleted: true, bytes_deleted: bytes, revision_deleted: args.expected_revision };
          }));
        },
      });
    },
  });
