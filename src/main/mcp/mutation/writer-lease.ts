/**
 * The cross-process writer lease of a slot (docs/mcp-tools.md#writer-lease), taken by every mutation while the
 * Bridge is enabled so that none runs beside an Agent `workspace-write` task. The MCP role only
 * reads `lock_dir`: it opens `NN.lock` read-only (flock arbitrates per open file, so a read-only
 * descriptor still excludes the Bridge's) and stats the guard `active/NN`; it never creates,
 * writes or chmods anything there.
 */

import { constants, fstatSync, lstatSync, openSync } from "node:fs";
import { ServerFsError } from "../../../shared/errors.ts";
import { tryLockExclusive, unlock } from "../../../shared/ffi/libc.ts";
import { closeQuietly, O_CLOEXEC } from "../../../shared/fs/dir-handle.ts";
import { osCode } from "../../../shared/fs/os-errors.ts";
import { guardPath } from "../../../shared/leases/guard-files.ts";
import { lockPath } from "../../../shared/leases/lock-files.ts";

/** Read-only, no symlink, and never blocking should a FIFO sit where the lock file belongs. */
const LOCK_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | O_CLOEXEC;

export type ReleaseLease = () => void;

const unavailable = (where: string) => new ServerFsError("AGENT_LOCK_UNAVAILABLE", `${where} the workdir's writer lock is unavailable`);

/** Steps 1–3 of docs/mcp-tools.md#writer-lease; on success the caller runs the filesystem phase, then calls the release. */
export function takeWriterLease(lockDir: string, slot: number, where: string): ReleaseLease {
  let fd: number;
  try {
    fd = openSync(lockPath(lockDir, slot), LOCK_FLAGS);
  } catch {
    throw unavailable(where);
  }
  let locked = false;
  try {
    if (!fstatSync(fd).isFile()) throw unavailable(where);
    const r = tryLockExclusive(fd);
    if (r === "busy") throw new ServerFsError("WORKDIR_BUSY", `${where} the workdir is busy: another writer holds its lease`);
    if (r === "error") throw unavailable(where);
    locked = true;
    checkGuard(guardPath(lockDir, slot), where);
  } catch (e) {
    if (locked) unlock(fd);
    closeQuietly(fd);
    throw e instanceof ServerFsError ? e : unavailable(where);
  }
  return () => {
    unlock(fd);
    closeQuietly(fd);
  };
}

/** The Bridge's active-slot guard: absent → go on; a regular file → fail closed. */
function checkGuard(guard: string, where: string): void {
  let isFile: boolean;
  try {
    isFile = lstatSync(guard).isFile();
  } catch (e) {
    if (osCode(e) === "ENOENT") return;
    throw unavailable(where);
  }
  if (isFile) {
    throw new ServerFsError("WORKDIR_RECOVERY_REQUIRED", `${where} the workdir needs recovery: an Agent run ended without cleanup`);
  }
  throw unavailable(where);
}
