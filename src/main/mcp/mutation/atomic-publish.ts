/**
 * Atomic publish (mcp-surface.md §6.2). New content goes to a reserved temp file in the target's
 * own directory, written completely and fsync-ed, and only then becomes visible: by a hard link for
 * a create (which never overwrites anything, of any type) or by a rename over the target for a
 * replace (which carries the target's mode, owner and extended attributes). Either way the target
 * is only ever in its old or its new state, and the temp name is removed on every failure.
 */
import { type BigIntStats, closeSync, constants, fchmodSync, fchownSync, fsyncSync, linkSync, openSync, renameSync, unlinkSync, writeSync } from "node:fs";
import { ServerFsError } from "../../../shared/errors.ts";
import { copyXattrs } from "../../../shared/ffi/xattr.ts";
import { at, closeQuietly, lstatAt, O_CLOEXEC } from "../../../shared/fs/dir-handle.ts";
import { osCode, osError } from "../../../shared/fs/os-errors.ts";
import { random16Hex } from "../../../shared/ids.ts";
import type { OpenFile } from "./existing-file.ts";
import { requireRevisionByName } from "./expected-revision.ts";

/** Created exclusively, never through a link; the kernel applies the umask to 0666. */
const TEMP_FLAGS = constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW | O_CLOEXEC;
const NEW_FILE_MODE = 0o666;
const PERMISSION_BITS = 0o7777n;

export const TEMP_PREFIX = ".serverfs-tmp-";

export interface PublishScope {
  where: string;
  syncDirectory(dirFd: number): void;
}

function writeAll(fd: number, bytes: Uint8Array): void {
  let off = 0;
  while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
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
 * Writes `bytes` to a fresh temp file in `dirFd`, lets `prepare` adjust it through its handle,
 * fsyncs it, then hands its name to `publish`. The temp name is gone when this returns or throws.
 */
function throughTemp<T>(dirFd: number, bytes: Uint8Array, where: string, prepare: (tmpFd: number) => void, publish: (tmp: string) => T): T {
  const tmp = `${TEMP_PREFIX}${random16Hex()}`;
  let fd: number;
  try {
    fd = openSync(at(dirFd, tmp), TEMP_FLAGS, NEW_FILE_MODE);
  } catch (e) {
    throw osError(e, "mutation", where);
  }
  try {
    try {
      writeAll(fd, bytes);
      prepare(fd);
      fsyncSync(fd);
      closeSync(fd);
    } catch (e) {
      closeQuietly(fd);
      throw osError(e, "mutation", where);
    }
    return publish(tmp);
  } finally {
    try {
      unlinkSync(at(dirFd, tmp));
    } catch {
      // already renamed over the target, or best effort after a failure
    }
  }
}

/** Create-only publish: anything already at `name` (a symlink or FIFO too) → PATH_ALREADY_EXISTS. */
export function publishNew(dirFd: number, name: string, bytes: Uint8Array, scope: PublishScope): BigIntStats {
  const taken = () => new ServerFsError("PATH_ALREADY_EXISTS", `${scope.where} already exists`);
  let present: boolean;
  try {
    present = exists(dirFd, name);
  } catch (e) {
    throw osError(e, "mutation", scope.where);
  }
  // A cheap early answer that spares writing the temp file; the link below is what decides.
  if (present) throw taken();
  throughTemp(
    dirFd,
    bytes,
    scope.where,
    () => {},
    (tmp) => {
      try {
        linkSync(at(dirFd, tmp), at(dirFd, name));
      } catch (e) {
        throw osCode(e) === "EEXIST" ? taken() : osError(e, "mutation", scope.where);
      }
    },
  );
  scope.syncDirectory(dirFd);
  return finalStat(dirFd, name, scope.where);
}

/** The target's permission bits, owner, group and extended attributes, onto the temp file. */
function carryMetadata(target: OpenFile, tmpFd: number, where: string): void {
  const failed = () => new ServerFsError("METADATA_PRESERVATION_FAILED", `${where} mode, owner or extended attributes could not be preserved`);
  try {
    // chown first: it clears set-id bits, which the chmod below restores.
    fchownSync(tmpFd, Number(target.st.uid), Number(target.st.gid));
    if (!copyXattrs(target.fd, tmpFd)) throw failed();
    fchmodSync(tmpFd, Number(target.st.mode & PERMISSION_BITS));
  } catch (e) {
    throw e instanceof ServerFsError ? e : failed();
  }
}

/**
 * Replace publish: the temp file takes over `target`'s metadata, the name's revision is checked
 * once more right before the rename (REVISION_CONFLICT leaves the target untouched), then the
 * rename commits.
 */
export function publishReplacement(
  dirFd: number,
  name: string,
  target: OpenFile,
  bytes: Uint8Array,
  expectedRevision: string,
  scope: PublishScope,
): BigIntStats {
  throughTemp(
    dirFd,
    bytes,
    scope.where,
    (tmpFd) => carryMetadata(target, tmpFd, scope.where),
    (tmp) => {
      requireRevisionByName(dirFd, name, expectedRevision, scope.where);
      try {
        renameSync(at(dirFd, tmp), at(dirFd, name));
      } catch (e) {
        throw osError(e, "mutation", scope.where);
      }
    },
  );
  scope.syncDirectory(dirFd);
  return finalStat(dirFd, name, scope.where);
}

/** The revision a mutation returns is taken after its commit, which changed ctime and nlink. */
export function finalStat(dirFd: number, name: string, where: string): BigIntStats {
  try {
    return lstatAt(dirFd, name);
  } catch (e) {
    throw osError(e, "mutation", where);
  }
}
