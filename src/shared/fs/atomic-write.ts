/**
 * The one way ServerFS makes a file appear whole or not at all: a temp file in the target's own
 * directory, created exclusively and owner-only (never through a link), written completely and
 * fsynced, given its final mode after the last write (a write clears set-id bits), fsynced again,
 * then published by a hard link (a create, which never replaces anything of any type: EEXIST) or a
 * rename over the target (a replace); the directory is fsynced last, so the publish survives a
 * crash. Every step goes through the directory's handle (`/proc/self/fd/<fd>/<name>`), so a path
 * component swapped meanwhile can never redirect it.
 *
 * Callers differ only in options: the temp name (each keeps the pattern its own leftover cleanup
 * recognises), steps on the temp's handle around the content (an owner, extended attributes), the
 * final mode, a last check right before the publish (a revision, an existing result) and what a
 * failed directory fsync means. Errors are the OS's, raw: each caller turns them into its own code.
 *
 * Offers `atomicWrite` (the whole sequence), its two halves `createTemp` + `fillTemp` and
 * `commitTemp` for a caller that takes a lock between them (the MCP mutation path), `discardTemp`,
 * `withDirectory` and `unlinkQuietly`.
 */
import { constants, fchmodSync, fsyncSync, linkSync, openSync, renameSync, unlinkSync, writeSync } from "node:fs";
import { at, closeQuietly, O_CLOEXEC } from "./dir-handle.ts";
import { PRIVATE_FILE } from "./modes.ts";
import { osCode } from "./os-errors.ts";

/** Created exclusively, never through a link, never inherited by a child. */
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW | O_CLOEXEC;
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | O_CLOEXEC;

export interface TempFile {
  name: string;
  /** Open for writing until `discardTemp`. */
  fd: number;
}

/** Steps on the temp's handle around the content. */
export interface ContentSteps {
  /** Before any byte is written (ownership, so no other owner ever sees the content). */
  beforeContent?(fd: number): void;
  /** After the content (extended attributes: a write would drop `security.capability`). */
  afterContent?(fd: number): void;
}

export interface CommitOptions {
  /** "create": a hard link, which fails with EEXIST on anything at the name; "replace": a rename over it. */
  publish: "create" | "replace";
  /** The final permission bits, set after the last write; without it the temp keeps its 0600 (less the umask). */
  mode?: number;
  /** The last checks, right before the link or rename; a throw leaves the target untouched. */
  beforePublish?(): void;
  /** Makes the publish durable; the default fsyncs the directory and throws on failure. */
  syncDirectory?(dirFd: number): void;
}

export interface AtomicWriteOptions extends ContentSteps, CommitOptions {
  /** A fresh name for the temp file in the target's directory. */
  tempName: string;
}

/** Creates `name` in `dirFd` exclusively and owner-only, before its first byte: the umask can only narrow it. */
export function createTemp(dirFd: number, name: string): TempFile {
  return { name, fd: openSync(at(dirFd, name), CREATE_FLAGS, PRIVATE_FILE) };
}

function writeAll(fd: number, bytes: Uint8Array): void {
  for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done);
}

/** Writes all of `bytes` to the temp file between the content steps, then fsyncs it. */
export function fillTemp(temp: TempFile, bytes: Uint8Array, steps: ContentSteps = {}): void {
  steps.beforeContent?.(temp.fd);
  writeAll(temp.fd, bytes);
  steps.afterContent?.(temp.fd);
  fsyncSync(temp.fd);
}

/**
 * Publishes the filled temp file as `name`: the final mode, an fsync, the last checks, the link or
 * rename, then the directory fsync. After a link the temp name is removed before the directory
 * fsync, so what is durable is the target alone (and a revision taken next counts one link).
 */
export function commitTemp(dirFd: number, temp: TempFile, name: string, o: CommitOptions): void {
  if (o.mode !== undefined) fchmodSync(temp.fd, o.mode);
  fsyncSync(temp.fd);
  o.beforePublish?.();
  if (o.publish === "create") {
    linkSync(at(dirFd, temp.name), at(dirFd, name));
    unlinkQuietly(at(dirFd, temp.name));
  } else {
    renameSync(at(dirFd, temp.name), at(dirFd, name));
  }
  if (o.syncDirectory) o.syncDirectory(dirFd);
  else fsyncSync(dirFd);
}

/**
 * Removes the temp name if it is still there (a rename took it; a failure left it) and closes the
 * handle. It never throws: it runs in a `finally`, where the write's own outcome is the one to tell,
 * and a name it could not remove is a leftover its caller's cleanup recognises.
 */
export function discardTemp(dirFd: number, temp: TempFile): void {
  try {
    unlinkSync(at(dirFd, temp.name));
  } catch {
    // gone already, or left for the caller's leftover cleanup
  }
  closeQuietly(temp.fd);
}

/** The whole sequence: `name` in `dirFd` holds `bytes` afterwards, or is as it was and no temp file remains. */
export function atomicWrite(dirFd: number, name: string, bytes: Uint8Array, o: AtomicWriteOptions): void {
  const temp = createTemp(dirFd, o.tempName);
  try {
    fillTemp(temp, bytes, o);
    commitTemp(dirFd, temp, name, o);
  } finally {
    discardTemp(dirFd, temp);
  }
}

/** `unlink` where "already gone" is success; any other failure is the caller's to see. */
export function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch (e) {
    if (osCode(e) !== "ENOENT") throw e;
  }
}

/**
 * Runs `fn` with a handle on the directory `path`, closing it afterwards. The path is followed
 * (an operator's config directory may well be a link); everything after goes through the handle.
 */
export function withDirectory<T>(path: string, fn: (dirFd: number) => T): T {
  const fd = openSync(path, DIR_FLAGS);
  try {
    return fn(fd);
  } finally {
    closeQuietly(fd);
  }
}
