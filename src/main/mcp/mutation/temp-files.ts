/**
 * Reserved temp files, named `.serverfs-tmp-<16 lowercase hex>`. A writer creates
 * its temp file owner-only and holds an exclusive `flock` on it from creation until the publish is
 * over, so "stale" has a proof instead of a guess: the lock can be taken only once the writer has
 * died. Stale files are removed lazily, whenever a directory operation meets them (never by
 * walking a workdir at startup); docs/reliability.md ("Hardening: writes, temp files, transfers
 * and HTTP") states the rule.
 */
import { constants, fstatSync, openSync, unlinkSync } from "node:fs";
import { opendir } from "node:fs/promises";
import { ServerFsError } from "../../../shared/errors.ts";
import { tryLockExclusive } from "../../../shared/ffi/libc.ts";
import { at, closeQuietly, lstatAt, O_CLOEXEC, self } from "../../../shared/fs/dir-handle.ts";
import { PRIVATE_FILE } from "../../../shared/fs/modes.ts";
import { osError } from "../../../shared/fs/os-errors.ts";
import { random16Hex } from "../../../shared/ids.ts";

export const TEMP_PREFIX = ".serverfs-tmp-";
/** Only names of exactly the format ServerFS writes are ever removed. */
const TEMP_NAME = /^\.serverfs-tmp-[0-9a-f]{16}$/;

/** Created exclusively, never through a link. */
const CREATE_FLAGS = constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW | O_CLOEXEC;
/** A cleaner probes without following a link and without blocking on a FIFO swapped in. */
const PROBE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | O_CLOEXEC;
/** A cleaner can take a fresh name between our create and our lock; a new name then succeeds. */
const CREATE_ATTEMPTS = 3;

export interface TempFile {
  name: string;
  /** Open for writing and exclusively locked until `dropTemp`. */
  fd: number;
}

export const isTempName = (name: string): boolean => TEMP_NAME.test(name);

/** Creates and locks a fresh temp file in the directory held by `dirFd`. */
export function createLockedTemp(dirFd: number, where: string): TempFile {
  for (let attempt = 0; attempt < CREATE_ATTEMPTS; attempt++) {
    const name = `${TEMP_PREFIX}${random16Hex()}`;
    let fd: number;
    try {
      // owner-only before the first byte is written; the umask can only narrow it
      fd = openSync(at(dirFd, name), CREATE_FLAGS, PRIVATE_FILE);
    } catch (e) {
      throw osError(e, "mutation", where);
    }
    const r = tryLockExclusive(fd);
    // Locked and still linked: ours. Busy, or unlinked meanwhile: a cleaner took it, which is harmless.
    if (r === "locked" && fstatSync(fd).nlink > 0) return { name, fd };
    closeQuietly(fd);
    if (r === "error") break;
  }
  throw new ServerFsError("MUTATION_IO_ERROR", `${where} a temporary file could not be locked`);
}

/** Removes the temp name if it is still there: it is gone after a rename, and best effort after a failure. */
export function unlinkTempName(dirFd: number, name: string): void {
  try {
    unlinkSync(at(dirFd, name));
  } catch {
    // already gone
  }
}

/** Removes the temp name if it is still there, then releases the lock. */
export function dropTemp(dirFd: number, temp: TempFile): void {
  unlinkTempName(dirFd, temp.name);
  closeQuietly(temp.fd);
}

/** Removes the temp file `name` of `dirFd` if its writer is gone; true when it was removed. */
export function removeIfStale(dirFd: number, name: string): boolean {
  let fd: number;
  try {
    fd = openSync(at(dirFd, name), PROBE_FLAGS);
  } catch {
    return false;
  }
  try {
    const st = fstatSync(fd, { bigint: true });
    if (!st.isFile() || tryLockExclusive(fd) !== "locked") return false;
    // Unlink only the very file whose lock we hold, not one created under the name since.
    const now = lstatAt(dirFd, name);
    if (now.ino !== st.ino || now.dev !== st.dev) return false;
    unlinkSync(at(dirFd, name));
    return true;
  } catch {
    return false;
  } finally {
    closeQuietly(fd);
  }
}

/** Removes every stale temp file in the directory held by `dirFd`, reading it without blocking the loop. */
export async function removeStaleTemps(dirFd: number): Promise<void> {
  let dir: Awaited<ReturnType<typeof opendir>>;
  try {
    dir = await opendir(self(dirFd));
  } catch {
    return;
  }
  try {
    for await (const entry of dir) if (isTempName(entry.name)) removeIfStale(dirFd, entry.name);
  } catch {
    // best effort: a directory that cannot be read further keeps its leftovers for the next call
  }
}
