/**
 * `delete_directory(workdir, path, expected_revision)` (mcp-surface.md §6.7): removes one empty
 * directory. Emptiness is physical: hidden, denied and reserved entries count, and a non-empty
 * directory's contents are never named.
 */
import { fstatSync, opendirSync, rmdirSync } from "node:fs";
import * as v from "valibot";
import { ServerFsError } from "../../../shared/errors.ts";
import { at, closeQuietly, lstatAt, openDirAt, self } from "../../../shared/fs/dir-handle.ts";
import { osError } from "../../../shared/fs/os-errors.ts";
import { entryType } from "../../../shared/fs/stat.ts";
import type { McpDeps } from "../deps.ts";
import { requireRevision, requireRevisionByName } from "../mutation/expected-revision.ts";
import { runMutation } from "../mutation/pipeline.ts";
import { defineTool } from "../tool.ts";

const Output = v.strictObject({ workdir: v.string(), path: v.string(), deleted: v.literal(true), revision_deleted: v.string() });

const notEmpty = (where: string) => new ServerFsError("DIRECTORY_NOT_EMPTY", `${where} is not empty`);

/** Whether the directory held by `dirFd` has any entry at all; reads one entry, not the listing. */
function hasAnyEntry(dirFd: number): boolean {
  const dir = opendirSync(self(dirFd));
  try {
    return dir.readSync() !== null;
  } finally {
    dir.closeSync();
  }
}

export const deleteDirectory = (deps: McpDeps) =>
  defineTool({
    name: "delete_directory",
    title: "Delete a directory",
    description:
      "Delete one empty directory (read-write workdirs only). Needs its current revision from stat_file; a directory holding anything, hidden entries included, is refused.",
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    input: v.strictObject({ workdir: v.string(), path: v.string(), expected_revision: v.string() }),
    output: Output,
    unexpected: "MUTATION_FAILED",
    run(args, call) {
      return runMutation(deps, call, {
        tool: "delete_directory",
        workdir: args.workdir,
        path: args.path,
        commit(scope) {
          const { where } = scope;
          return scope.inParent("PATH_NOT_FOUND", (parentFd, name) => {
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
              requireRevision(fstatSync(dirFd, { bigint: true }), args.expected_revision, where);
              requireRevisionByName(parentFd, name, args.expected_revision, where);
              if (hasAnyEntry(dirFd)) throw notEmpty(where);
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
            scope.syncDirectory(parentFd);
            call.audit["revision"] = args.expected_revision;
            return { workdir: scope.ws.alias, path: scope.path, deleted: true, revision_deleted: args.expected_revision };
          });
        },
      });
    },
  });
