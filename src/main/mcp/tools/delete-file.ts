/**
 * `delete_file(workdir, path, expected_revision)` (docs/mcp-tools.md#delete_file): removes one regular file,
 * text or binary, only in the exact state the client saw. A symlink is never removed or followed.
 */
import { unlinkSync } from "node:fs";
import * as v from "valibot";
import { at, closeQuietly } from "../../../shared/fs/dir-handle.ts";
import { openExistingFile } from "../../../shared/fs/existing-file.ts";
import { osError } from "../../../shared/fs/os-errors.ts";
import type { McpDeps } from "../deps.ts";
import { requireRevision, requireRevisionByName } from "../mutation/expected-revision.ts";
import { deleteTool } from "./delete-tool.ts";

export const deleteFile = (deps: McpDeps) =>
  deleteTool(deps, {
    name: "delete_file",
    title: "Delete a file",
    description:
      "Permanently delete one regular file (read-write workdirs only). Needs the file's current revision from stat_file or read_text_file; symlinks, directories and special files are refused.",
    pathAbout: "The regular file to delete.",
    revisionFrom: "stat_file or read_text_file",
    extraOutput: { bytes_deleted: v.number() },
    remove(dirFd, name, revision, where) {
      const file = openExistingFile(dirFd, name, where, "mutation");
      try {
        requireRevision(file.st, revision, where);
      } finally {
        closeQuietly(file.fd);
      }
      requireRevisionByName(dirFd, name, revision, where);
      try {
        unlinkSync(at(dirFd, name));
      } catch (e) {
        throw osError(e, "mutation", where);
      }
      return { bytes_deleted: Number(file.st.size) };
    },
  });
