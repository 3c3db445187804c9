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
import { createTemp, type TempFile } from "../../../shared/fs/atomic-write.ts";
import { at, closeQuietly, lstatAt, O_CLOEXEC, self } from "../../../shared/fs/dir-handle.ts";
import { osError } from "../../../shared/fs/os-errors.ts";
import { random16Hex } from "../../../shared/ids.ts";

export const TEMP_PREFIX = ".serverfs-tmp-";
/** Only names of exactly the format ServerFS writes are ever removed. */
const TEMP_NAME = /^\.serverfs-tmp-[0-9a-f]{16}$/;

/** A cleaner probes without following a link and without blocking on a FIFO swapped in. */
const PROBE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | O_CLOEXEC;
/** A cleaner can take a fresh name between our create and our lock; a new name then succeeds. */
const CREATE_ATTEMPTS = 3;

export const isTempName = (name: string): boolean => TEMP_NAME.test(name);

/**
 * Creates (atomic-write.ts: exclusive, owner-only) and locks a fresh temp file in the directory held
 * by `dirFd`; its handle stays open and locked until `discardTemp`.
 */
export function createLockedTemp(dirFd: number, where: string): TempFile {
  for (let attempt = 0; attempt < CREATE_ATTEMPTS; attempt++) {
    let temp: TempFile;
    try {
      temp = createTemp(dirFd, `${TEMP_PREFIX}${random16Hex()}`);
    } catch (e) {
      throw osError(e, "mutation", where);
    }
    const r = tryLockExclusive(temp.fd);
    // Locked and still linked: ours. Busy, or unlinked meanwhile: a cleaner took it, which is harmless.
    if (r === "locked" && fstatSync(temp.fd).nlink > 0) return temp;
    closeQuietly(temp.fd);
    if (r === "error") break;
  }
  throw new ServerFsError("MUTATION_IO_ERROR", `${where} a temporary file could not be locked`);
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
