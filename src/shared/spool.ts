/**
 * The result spool (docs/task-model.md#results): redacted final texts over the inline limit (which
 * result-class.ts decides) live in `state_dir/results/<task_id>.txt`, private to the Bridge user,
 * published atomically and read back in UTF-8-safe chunks. Synchronous and stateless, so the spool
 * worker (and a test) can call it on any thread. Offers:
 * - `resultsDir(stateDir)`, `ensureResultsDir(stateDir)`: the private directory, created 0700;
 * - `writeSpool(stateDir, taskId, utf8)`: the atomic write of docs/task-model.md#results steps (1)–(5);
 * - `readSpoolChunk(stateDir, taskId, expectedSize, offsetBytes, maxBytes)`: docs/task-model.md#results steps 2–6;
 * - `removeSpool(stateDir, taskId)`: the GC unlink of docs/task-model.md#retention, true when GC may delete the row;
 * - `removeLeftoverTemps(stateDir)`: startup removal of `.*.tmp` files.
 *
 * The directory is opened once per call without following symlinks and checked by `fstat`; every
 * file inside is then reached through that handle (`/proc/self/fd/<fd>/<name>`), so a swapped path
 * component can never redirect a write or a read.
 */
import { type BigIntStats, constants, fstatSync, fsyncSync, lstatSync, mkdirSync, openSync, readdirSync, readSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { byteSize } from "./byte-size.ts";
import { sha256Hex } from "./canonical-json.ts";
import { ServerFsError } from "./errors.ts";
import { atomicWrite, unlinkQuietly } from "./fs/atomic-write.ts";
import { at, closeQuietly, O_CLOEXEC, READ_FLAGS, self } from "./fs/dir-handle.ts";
import { isOwnerOnly, ownUid, PRIVATE_DIR, PRIVATE_FILE } from "./fs/modes.ts";
import { osCode } from "./fs/os-errors.ts";
import { isTaskId, random16Hex } from "./ids.ts";
import { LIMITS } from "./limits.ts";
import { decodeStrict, incompleteTailStart } from "./utf8.ts";

export interface SpoolWritten {
  size_bytes: number;
  sha256: string;
}

/** `task.result.read`'s answer without `correlation_id`, which the task row supplies. */
export interface SpoolChunk {
  text: string;
  offset_bytes: number;
  next_offset_bytes: number;
  eof: boolean;
}

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | O_CLOEXEC;
const LEFTOVER_TEMP = /^\..*\.tmp$/;

const storageError = (phrase: string) => new ServerFsError("AGENT_RESULT_STORAGE_ERROR", phrase);
const asStorageError = (e: unknown, phrase: string) => (e instanceof ServerFsError ? e : storageError(phrase));
const unsafeDir = () => storageError("the result directory is not a private directory");
const notRetrievable = () => new ServerFsError("AGENT_RESULT_NOT_RETRIEVABLE", "the task has no spooled result to read");

/** A regular file or directory of ours that no group or other user can touch. */
const isPrivate = (st: BigIntStats): boolean => st.uid === BigInt(ownUid()) && isOwnerOnly(st.mode);

function requireTaskId(taskId: string): void {
  if (!isTaskId(taskId)) throw new ServerFsError("AGENT_TASK_NOT_FOUND", "unknown task");
}

const spoolName = (taskId: string) => `${taskId}.txt`;

export const resultsDir = (stateDir: string): string => join(stateDir, "results");

/**
 * The results directory's handle, checked to be a private directory of ours. With `create`, a
 * missing directory is made 0700 (its parent, `state_dir`, is the startup's to vouch for); without,
 * a missing directory gives null.
 */
function openResultsDir(stateDir: string, create: boolean): number | null {
  const dir = resultsDir(stateDir);
  if (create) {
    try {
      mkdirSync(dir, { mode: PRIVATE_DIR });
    } catch (e) {
      if (osCode(e) !== "EEXIST") throw storageError("the result directory could not be created");
    }
  }
  let fd: number;
  try {
    fd = openSync(dir, DIR_FLAGS);
  } catch (e) {
    if (!create && osCode(e) === "ENOENT") return null;
    throw unsafeDir();
  }
  try {
    const st = fstatSync(fd, { bigint: true });
    if (st.isDirectory() && isPrivate(st)) return fd;
  } catch {
    // a directory that cannot be verified counts as unsafe
  }
  closeQuietly(fd);
  throw unsafeDir();
}

function withResultsDir<T>(stateDir: string, create: boolean, fn: (dirFd: number | null) => T): T {
  const fd = openResultsDir(stateDir, create);
  try {
    return fn(fd);
  } finally {
    closeQuietly(fd);
  }
}

export function ensureResultsDir(stateDir: string): void {
  withResultsDir(stateDir, true, () => undefined);
}

function existsAt(dirFd: number, name: string): boolean {
  try {
    lstatSync(at(dirFd, name));
    return true;
  } catch (e) {
    if (osCode(e) === "ENOENT") return false;
    throw e;
  }
}

/** Removals are durable at the next sync anyway; a failed directory sync must not undo them. */
function fsyncQuietly(fd: number): void {
  try {
    fsyncSync(fd);
  } catch {
    // nothing to roll back
  }
}

/**
 * docs/task-model.md#results steps (1)–(5), by the atomic write (atomic-write.ts): a temp file
 * `.<task_id>.<hex>.tmp`, which startup recognises as a leftover, renamed to `<task_id>.txt` only
 * when no such file exists yet.
 */
export function writeSpool(stateDir: string, taskId: string, bytes: Uint8Array): SpoolWritten {
  requireTaskId(taskId);
  if (bytes.length > LIMITS.max_spooled_result_bytes) {
    throw new ServerFsError("AGENT_RESULT_TOO_LARGE", `the final response is over ${byteSize(LIMITS.max_spooled_result_bytes)}`);
  }
  const sha256 = sha256Hex(bytes);
  withResultsDir(stateDir, true, (dirFd) => {
    const dir = dirFd!;
    const final = spoolName(taskId);
    try {
      atomicWrite(dir, final, bytes, {
        tempName: `.${taskId}.${random16Hex()}.tmp`,
        publish: "replace",
        mode: PRIVATE_FILE,
        beforePublish: () => {
          if (existsAt(dir, final)) throw storageError("a spooled result already exists for the task");
        },
        syncDirectory: (fd) => {
          try {
            fsyncSync(fd);
          } catch (e) {
            // a failed write leaves nothing behind, not even a published file nobody will record
            unlinkQuietly(at(fd, final));
            throw e;
          }
        },
      });
    } catch (e) {
      throw asStorageError(e, "the result could not be spooled");
    }
  });
  return { size_bytes: bytes.length, sha256 };
}

/**
 * docs/task-model.md#retention: unlinks the task's spool file if there is one. True when GC may delete the row: the file
 * is gone or never existed. False (skip this pass) when the entry is not a regular file, the
 * directory is unsafe, or the unlink fails. An id outside the format can have no spool file.
 */
export function removeSpool(stateDir: string, taskId: string): boolean {
  if (!isTaskId(taskId)) return true;
  let dirFd: number | null;
  try {
    dirFd = openResultsDir(stateDir, false);
  } catch {
    return false;
  }
  if (dirFd === null) return true;
  try {
    const path = at(dirFd, spoolName(taskId));
    try {
      if (!lstatSync(path).isFile()) return false;
      unlinkSync(path);
      return true;
    } catch (e) {
      return osCode(e) === "ENOENT";
    }
  } finally {
    closeQuietly(dirFd);
  }
}

/** Startup (one Bridge per state_dir, so no write is in flight): removes `.*.tmp` files; returns how many. */
export function removeLeftoverTemps(stateDir: string): number {
  return withResultsDir(stateDir, false, (dirFd) => {
    if (dirFd === null) return 0;
    let names: string[];
    try {
      names = readdirSync(self(dirFd));
    } catch {
      throw storageError("the result directory could not be listed");
    }
    let removed = 0;
    for (const name of names) {
      if (!LEFTOVER_TEMP.test(name)) continue;
      const path = at(dirFd, name);
      try {
        if (!lstatSync(path).isFile()) continue;
        unlinkSync(path);
        removed++;
      } catch {
        // vanished meanwhile
      }
    }
    if (removed > 0) fsyncQuietly(dirFd);
    return removed;
  });
}

/** docs/task-model.md#results step 5: strict UTF-8, where only an incomplete character at the very end may be dropped. */
function decodeChunk(bytes: Uint8Array): { text: string; length: number } {
  const whole = decodeStrict(bytes);
  if (whole !== null) return { text: whole, length: bytes.length };
  const cut = incompleteTailStart(bytes);
  const head = cut === null ? null : decodeStrict(bytes.subarray(0, cut));
  if (head === null) throw new ServerFsError("INVALID_RESULT_OFFSET", "offset_bytes is not at a character boundary");
  if (cut === 0) throw new ServerFsError("INVALID_RESULT_LIMIT", "max_bytes is too small for the next character");
  return { text: head, length: cut! };
}

export function readSpoolChunk(stateDir: string, taskId: string, expectedSize: number, offsetBytes: number, maxBytes: number): SpoolChunk {
  requireTaskId(taskId);
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 1 || maxBytes > LIMITS.max_result_chunk_bytes) {
    throw new ServerFsError("INVALID_RESULT_LIMIT", `max_bytes is out of range (1..${LIMITS.max_result_chunk_bytes})`);
  }
  if (!Number.isSafeInteger(offsetBytes) || offsetBytes < 0) throw new ServerFsError("INVALID_RESULT_OFFSET", "offset_bytes is out of range (>=0)");
  const fd = withResultsDir(stateDir, false, (dirFd) => {
    if (dirFd === null) throw notRetrievable();
    try {
      return openSync(at(dirFd, spoolName(taskId)), READ_FLAGS);
    } catch (e) {
      if (osCode(e) === "ENOENT") throw notRetrievable();
      throw storageError("the spooled result could not be opened");
    }
  });
  try {
    let st: BigIntStats;
    try {
      st = fstatSync(fd, { bigint: true });
    } catch {
      throw storageError("the spooled result could not be read");
    }
    if (!st.isFile() || !isPrivate(st) || !Number.isSafeInteger(expectedSize) || st.size !== BigInt(expectedSize)) {
      throw storageError("the spooled result does not match its record");
    }
    const size = Number(st.size);
    if (offsetBytes > size) throw new ServerFsError("INVALID_RESULT_OFFSET", "offset_bytes is past the end of the result");
    const want = Math.min(maxBytes, size - offsetBytes);
    const buf = Buffer.alloc(want);
    let got: number;
    try {
      got = want === 0 ? 0 : readSync(fd, buf, 0, want, offsetBytes);
    } catch (e) {
      throw asStorageError(e, "the spooled result could not be read");
    }
    if (got !== want) throw storageError("the spooled result could not be read");
    const { text, length } = decodeChunk(buf);
    const next = offsetBytes + length;
    return { text, offset_bytes: offsetBytes, next_offset_bytes: next, eof: next >= size };
  } finally {
    closeQuietly(fd);
  }
}
