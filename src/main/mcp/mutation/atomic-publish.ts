/**
 * Atomic publish (docs/mcp-tools.md#atomic-publish), by the atomic write every ServerFS file takes
 * (src/shared/fs/atomic-write.ts). New content goes to a reserved temp file in the target's
 * own directory, written completely and fsync-ed, and only then becomes visible: by a hard link for
 * a create (which never overwrites anything, of any type) or by a rename over the target for a
 * replace (which carries the target's mode, owner and extended attributes). Either way the target
 * is only ever in its old or its new state, and the temp name is removed on every failure.
 *
 * The temp file is owner-only and locked from its creation (temp-files.ts); its final mode is set
 * only at the publish, under the workdir's cross-process lock together with the last revision check
 * (workdir-lock.ts), so content is never readable by others in flight and a writer that dies while
 * waiting leaves a file the next directory operation can prove stale and remove.
 */
import { type BigIntStats, fchmodSync, fchownSync } from "node:fs";
import { ServerFsError } from "../../../shared/errors.ts";
import { copyXattrs } from "../../../shared/ffi/xattr.ts";
import { type ContentSteps, commitTemp, discardTemp, fillTemp, type TempFile } from "../../../shared/fs/atomic-write.ts";
import { lstatAt } from "../../../shared/fs/dir-handle.ts";
import type { OpenFile } from "../../../shared/fs/existing-file.ts";
import { permissionBits } from "../../../shared/fs/modes.ts";
import { osCode, osError } from "../../../shared/fs/os-errors.ts";
import { requireRevisionByName } from "./expected-revision.ts";
import { createLockedTemp, removeStaleTemps } from "./temp-files.ts";

/** A new file's permission bits: 0666 less the process umask (docs/mcp-tools.md#atomic-publish). */
const NEW_FILE_MODE = 0o666;

export interface PublishScope {
  where: string;
  syncDirectory(dirFd: number): void;
  /** Runs `fn` (synchronous) holding the workdir's cross-process mutation lock. */
  exclusive<R>(fn: () => R): Promise<R>;
}

/** How the temp file becomes the target: metadata around the content, then, under the lock, the commit. */
interface TempSteps<T> extends ContentSteps {
  /** Under the lock: the final mode, the last checks, the link or rename (`commitTemp`), the final stat. */
  commit(temp: TempFile): T;
}

const exists = (dirFd: number, name: string): boolean => {
  try {
    lstatAt(dirFd, name);
    return true;
  } catch (e) {
    if (osCode(e) === "ENOENT") return false;
    throw e;
  }
};

/**
 * Writes `bytes` to a fresh locked temp file in `dirFd` and fsyncs it (atomic-write.ts), then takes
 * the workdir lock for the commit. The temp name is gone and its lock released when this settles.
 */
async function throughTemp<T>(dirFd: number, bytes: Uint8Array, scope: PublishScope, steps: TempSteps<T>): Promise<T> {
  const temp = createLockedTemp(dirFd, scope.where);
  try {
    try {
      fillTemp(temp, bytes, steps);
    } catch (e) {
      throw osError(e, "mutation", scope.where);
    }
    return await scope.exclusive(() => steps.commit(temp));
  } finally {
    discardTemp(dirFd, temp);
  }
}

/**
 * Before a create in the directory held by `dirFd`: anything already at `name` is PATH_ALREADY_EXISTS
 * at once — a cheap early answer, and a refused call changes nothing, not even stale temp files — and
 * only then are the stale temp files of killed writers removed. The create itself still decides.
 */
export async function clearForCreate(dirFd: number, name: string, where: string): Promise<void> {
  let present: boolean;
  try {
    present = exists(dirFd, name);
  } catch (e) {
    throw osError(e, "mutation", where);
  }
  if (present) throw new ServerFsError("PATH_ALREADY_EXISTS", `${where} already exists`);
  await removeStaleTemps(dirFd);
}

/** Create-only publish: anything already at `name` (a symlink or FIFO too) → PATH_ALREADY_EXISTS. */
export async function publishNew(dirFd: number, name: string, bytes: Uint8Array, scope: PublishScope): Promise<BigIntStats> {
  const taken = () => new ServerFsError("PATH_ALREADY_EXISTS", `${scope.where} already exists`);
  await clearForCreate(dirFd, name, scope.where);
  const mode = NEW_FILE_MODE & ~process.umask();
  return throughTemp(dirFd, bytes, scope, {
    commit: (temp) => {
      try {
        // the temp name goes before the final stat (commitTemp): the revision counts links
        commitTemp(dirFd, temp, name, { publish: "create", mode, syncDirectory: scope.syncDirectory });
      } catch (e) {
        throw osCode(e) === "EEXIST" ? taken() : osError(e, "mutation", scope.where);
      }
      return finalStat(dirFd, name, scope.where);
    },
  });
}

const metadataFailed = (where: string) =>
  new ServerFsError("METADATA_PRESERVATION_FAILED", `${where} mode, owner or extended attributes could not be preserved`);

/** Runs one metadata step (false or a throw: it failed) as METADATA_PRESERVATION_FAILED, the target untouched. */
function preserving(where: string, step: () => unknown): void {
  let ok: unknown;
  try {
    ok = step();
  } catch {
    throw metadataFailed(where);
  }
  if (ok === false) throw metadataFailed(where);
}

/**
 * Replace publish: the temp file takes over `target`'s owner, extended attributes and mode, the
 * name's revision is checked once more right before the rename (REVISION_CONFLICT leaves the
 * target untouched), then the rename commits.
 */
export function publishReplacement(
  dirFd: number,
  name: string,
  target: OpenFile,
  bytes: Uint8Array,
  expectedRevision: string,
  scope: PublishScope,
): Promise<BigIntStats> {
  const { where } = scope;
  return throughTemp(dirFd, bytes, scope, {
    beforeContent: (tmpFd) => preserving(where, () => fchownSync(tmpFd, Number(target.st.uid), Number(target.st.gid))),
    afterContent: (tmpFd) => preserving(where, () => copyXattrs(target.fd, tmpFd)),
    commit: (temp) => {
      // the final mode after every write (which clears set-id bits); its failure is the metadata's
      preserving(where, () => fchmodSync(temp.fd, permissionBits(Number(target.st.mode))));
      try {
        commitTemp(dirFd, temp, name, {
          publish: "replace",
          beforePublish: () => requireRevisionByName(dirFd, name, expectedRevision, where),
          syncDirectory: scope.syncDirectory,
        });
      } catch (e) {
        throw osError(e, "mutation", where);
      }
      return finalStat(dirFd, name, where);
    },
  });
}

/** The revision a mutation returns is taken after its commit, which changed ctime and nlink. */
export function finalStat(dirFd: number, name: string, where: string): BigIntStats {
  try {
    return lstatAt(dirFd, name);
  } catch (e) {
    throw osError(e, "mutation", where);
  }
}
