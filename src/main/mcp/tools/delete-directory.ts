/**
 * `delete_directory(workdir, path, expected_revision)` (docs/mcp-tools.md#delete_directory): removes one empty
 * directory. Emptiness is physical: hidden, denied and reserved entries count, and a non-empty
 * directory's contents are never named; only a temp file whose writer has died is removed first,
 * so a directory that lists as empty is not refused because of a crash.
 */
import { fstatSync, opendirSync, rmdirSync } from "node:fs";
import { ServerFsError } from "../../../shared/errors.ts";
import { at, closeQuietly, lstatAt, openDirAt, self } from "../../../shared/fs/dir-handle.ts";
import { osError } from "../../../shared/fs/os-errors.ts";
import { entryType } from "../../../shared/fs/stat.ts";
import type { McpDeps } from "../deps.ts";
import { requireRevision, requireRevisionByName } from "../mutation/expected-revision.ts";
import { isTempName, removeIfStale } from "../mutation/temp-files.ts";
import { deleteTool } from "./delete-tool.ts";

const notEmpty = (where: string) => new ServerFsError("DIRECTORY_NOT_EMPTY", `${where} is not empty`);
const stillWriting = (where: string) =>
  new ServerFsError("DIRECTORY_NOT_EMPTY", `${where} is not empty: another ServerFS process is still writing a file in it`);

/**
 * Empties the directory held by `dirFd` of stale temp files (their writer died, temp-files.ts) and
 * throws DIRECTORY_NOT_EMPTY if anything else is left; it stops reading at the first such entry.
 */
function requireEmptyAfterCleanup(dirFd: number, where: string): void {
  const dir = opendirSync(self(dirFd));
  let liveTemp = false;
  try {
    for (let entry = dir.readSync(); entry !== null; entry = dir.readSync()) {
      if (!isTempName(entry.name)) throw notEmpty(where);
      if (!removeIfStale(dirFd, entry.name)) liveTemp = true;
    }
  } finally {
    dir.closeSync();
  }
  if (liveTemp) throw stillWriting(where);
}

export const deleteDirectory = (deps: McpDeps) =>
  deleteTool(deps, {
    name: "delete_directory",
    title: "Delete a directory",
    description:
      "Delete one empty directory (read-write workdirs only). Needs its current revision from stat_file; a directory holding anything, hidden entries included, is refused.",
    pathAbout: "The empty directory to delete.",
    revisionFrom: "stat_file",
    extraOutput: {},
    remove(parentFd, name, revision, where) {
      let type: ReturnType<typeof entryType>;
      try {
        type = entryType(lstatAt(parentFd, name));
      } catch (e) {
        throw osError(e, "mutation", where);
      }
      if (type === "symlink") throw new ServerFsError("SYMLINK_NOT_ALLOWED", `${where} is a symlink, which is not followed`);
      if (type !== "directory") throw new ServerFsError("NOT_A_DIRECTORY", `${where} is not a directory`);
      const dirFd = openDirAt(parentFd, name, { where, side: "mutation" });
      try {
        requireRevision(fstatSync(dirFd, { bigint: true }), revision, where);
        requireRevisionByName(parentFd, name, revision, where);
        requireEmptyAfterCleanup(dirFd, where);
      } catch (e) {
        throw osError(e, "mutation", where);
      } finally {
        closeQuietly(dirFd);
      }
      try {
        rmdirSync(at(parentFd, name));
      } catch (e) {
        // An entry that appeared since the check.
        throw osError(e, "mutation", where, { ENOTEMPTY: "DIRECTORY_NOT_EMPTY", EEXIST: "DIRECTORY_NOT_EMPTY" });
      }
      return {};
    },
  });
