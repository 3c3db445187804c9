/**
 * Writer leases (docs/task-model.md#lease-files-and-the-active-slot-guard): sixteen pre-created `NN.lock` files under `lock_dir`, each
 * arbitrated with a non-blocking exclusive `flock`. Locks on separate open file descriptions
 * conflict even inside one process, so a second write task for a held slot sees WORKDIR_BUSY.
 */
import { chownSync, closeSync, constants, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync } from "node:fs";
import { join } from "node:path";
import { ServerFsError } from "../errors.ts";
import { tryLockExclusive, unlock } from "../ffi/libc.ts";
import { O_CLOEXEC } from "../fs/dir-handle.ts";
import { dirMode, fileMode, octal, ownUid } from "../fs/modes.ts";
import { errnoReason } from "../fs/os-errors.ts";

export const SLOTS = Array.from({ length: 16 }, (_, i) => i + 1);
export const slotName = (slot: number) => String(slot).padStart(2, "0");
export const lockPath = (lockDir: string, slot: number) => join(lockDir, `${slotName(slot)}.lock`);

const unsafe = (phrase: string) => new ServerFsError("LOCK_PATH_UNSAFE", phrase);

/**
 * Creates `dir` (and parents) with `mode`, then insists it is a real directory of ours. Each failure
 * says why in words and what would fix it (the caller adds which directory): never a raw OS message.
 */
export function ensurePrivateDir(dir: string, mode: number, gid: number | null, fail: (phrase: string) => ServerFsError): void {
  try {
    mkdirSync(dir, { recursive: true, mode });
  } catch (e) {
    throw fail(`the directory cannot be created (${errnoReason(e)}); create it, or choose a writable place`);
  }
  const st = lstatSync(dir);
  if (!st.isDirectory() || st.isSymbolicLink())
    throw fail("the directory is not a real directory (a symbolic link or a file); point the setting at a real directory");
  if (st.uid !== ownUid()) throw fail(`the directory is owned by uid ${st.uid}, not by this user (uid ${ownUid()}); chown it or choose another directory`);
  try {
    const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | O_CLOEXEC);
    try {
      fchmodSync(fd, mode);
    } finally {
      closeSync(fd);
    }
    if (gid !== null) chownSync(dir, ownUid(), gid);
  } catch (e) {
    throw fail(
      `the directory cannot be made private (mode ${octal(mode)}${gid !== null ? `, group ${gid}` : ""}): ${errnoReason(e)}; it must be on a writable file system you own`,
    );
  }
}

/** Prepares `lock_dir`, `active/` and the sixteen lock files (docs/task-model.md#lease-files-and-the-active-slot-guard, docs/task-model.md#lease-files-and-the-active-slot-guard). */
export function prepareLockDir(lockDir: string, sharingGid: number | null): void {
  ensurePrivateDir(lockDir, dirMode(sharingGid), sharingGid, unsafe);
  ensurePrivateDir(join(lockDir, "active"), dirMode(sharingGid), sharingGid, unsafe);
  const lockMode = fileMode(sharingGid);
  for (const slot of SLOTS) {
    let fd: number;
    try {
      fd = openSync(lockPath(lockDir, slot), constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW | O_CLOEXEC, lockMode);
    } catch {
      throw unsafe(`lock file ${slotName(slot)}.lock is not a regular file`);
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw unsafe(`lock file ${slotName(slot)}.lock is not a regular file`);
      if (st.uid !== ownUid()) throw unsafe(`lock file ${slotName(slot)}.lock is owned by another user`);
      fchmodSync(fd, lockMode);
      if (sharingGid !== null) chownSync(lockPath(lockDir, slot), ownUid(), sharingGid);
    } finally {
      closeSync(fd);
    }
  }
}

export interface Lease {
  readonly slot: number;
  release(): void;
}

export function checkSlot(slot: number): void {
  if (!Number.isSafeInteger(slot) || slot < 1 || slot > 16) {
    throw new ServerFsError("INVALID_WORKDIR_SLOT", "the workdir slot is outside 1..16");
  }
}

/** Takes the slot's lease, never creating the lock file: WORKDIR_BUSY when held. */
export function acquireLease(lockDir: string, slot: number): Lease {
  checkSlot(slot);
  let fd: number;
  try {
    fd = openSync(lockPath(lockDir, slot), constants.O_RDWR | constants.O_NOFOLLOW | O_CLOEXEC);
  } catch {
    throw unsafe("the slot's lock file is missing or unsafe");
  }
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    throw unsafe("the slot's lock file is not a regular file");
  }
  const r = tryLockExclusive(fd);
  if (r !== "locked") {
    closeSync(fd);
    if (r === "busy") throw new ServerFsError("WORKDIR_BUSY", "the workdir's writer lease is held");
    throw unsafe("the slot's lock file cannot be locked");
  }
  let released = false;
  return {
    slot,
    release() {
      if (released) return;
      released = true;
      unlock(fd);
      closeSync(fd);
    },
  };
}
