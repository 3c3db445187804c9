/**
 * Race-safe traversal (docs/mcp-tools.md#traversal-by-handle-and-symlinks). Every access starts from a handle on the workdir's
 * real root and opens one segment at a time relative to its parent's handle, never following a
 * symlink. On Linux, `/proc/self/fd/<fd>/<name>` names `<name>` inside the directory that `<fd>`
 * holds open, whatever happened to the path since; with no-follow on the final name this is the
 * `openat`/`fstatat` family without an FFI errno dance.
 */
import { type BigIntStats, closeSync, constants, lstatSync, openSync } from "node:fs";
import { ServerFsError } from "../errors.ts";
import { osCode, osError, type Side } from "./os-errors.ts";
import { entryType } from "./stat.ts";

export const O_CLOEXEC = 0o2000000;
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | O_CLOEXEC;
/** Opening a final segment for reading never blocks on a FIFO and never takes a terminal. */
export const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY | O_CLOEXEC;

/** The path that names `name` inside the directory held open by `dirFd`. */
export const at = (dirFd: number, name: string): string => `/proc/self/fd/${dirFd}/${name}`;
/** The path of the directory held open by `dirFd` itself. */
export const self = (dirFd: number): string => `/proc/self/fd/${dirFd}`;

export function closeQuietly(fd: number | null | undefined): void {
  if (fd === null || fd === undefined || fd < 0) return;
  try {
    closeSync(fd);
  } catch {
    // already closed: nothing to release
  }
}

export function lstatAt(dirFd: number, name: string): BigIntStats {
  return lstatSync(at(dirFd, name), { bigint: true });
}

/** Opens the trusted anchor: the workdir's real root, not following a symlink in its last component. */
export function openRoot(realRoot: string, where: string, side: Side): number {
  try {
    return openSync(realRoot, DIR_FLAGS);
  } catch (e) {
    throw osError(e, side, where);
  }
}

export interface WalkContext {
  /** `alias:path` prefix for messages. */
  where: string;
  side: Side;
  /** ENOENT while walking maps here (`PARENT_NOT_FOUND` for creates). */
  missing?: "PATH_NOT_FOUND" | "PARENT_NOT_FOUND";
}

/** Opens `name` inside `dirFd` as a directory; a symlink or a non-directory is told apart by lstat. */
export function openDirAt(dirFd: number, name: string, ctx: WalkContext): number {
  try {
    return openSync(at(dirFd, name), DIR_FLAGS);
  } catch (e) {
    const code = osCode(e);
    if (code === "ENOTDIR" || code === "ELOOP") {
      let kind: string | null = null;
      try {
        kind = entryType(lstatAt(dirFd, name));
      } catch {
        kind = null;
      }
      if (kind === "symlink") throw new ServerFsError("SYMLINK_NOT_ALLOWED", `${ctx.where} has a symlink in its path, which is not followed`);
      if (kind === null && code === "ENOTDIR") throw osError(e, ctx.side, ctx.where);
      throw new ServerFsError("NOT_A_DIRECTORY", `${ctx.where} is not a directory`);
    }
    if (code === "ENOENT") {
      const missing = ctx.missing ?? "PATH_NOT_FOUND";
      throw new ServerFsError(missing, `${ctx.where} ${missing === "PARENT_NOT_FOUND" ? "parent directory does not exist" : "does not exist"}`);
    }
    throw osError(e, ctx.side, ctx.where);
  }
}

/**
 * Walks `segments` from the root handle, holding at most two handles at a time, and returns the
 * handle of the last one (which the caller must close). `segments = []` returns the root's handle.
 */
export function openDirPath(realRoot: string, segments: readonly string[], ctx: WalkContext): number {
  let fd = openRoot(realRoot, ctx.where, ctx.side);
  try {
    for (const seg of segments) {
      const next = openDirAt(fd, seg, ctx);
      closeSync(fd);
      fd = next;
    }
    return fd;
  } catch (e) {
    closeQuietly(fd);
    throw e;
  }
}

/**
 * Runs `fn` with the handle of the directory `segments` names, closing it afterwards: once `fn`
 * returns, or once the promise it returns settles.
 */
export function withDir<T>(realRoot: string, segments: readonly string[], ctx: WalkContext, fn: (dirFd: number) => T): T {
  const fd = openDirPath(realRoot, segments, ctx);
  let result: T;
  try {
    result = fn(fd);
  } catch (e) {
    closeQuietly(fd);
    throw e;
  }
  if (result instanceof Promise) return result.finally(() => closeQuietly(fd)) as T;
  closeQuietly(fd);
  return result;
}

/** Runs `fn` with the parent directory's handle and the final name (segments must be non-empty). */
export function withParent<T>(realRoot: string, segments: readonly string[], ctx: WalkContext, fn: (parentFd: number, name: string) => T): T {
  const name = segments[segments.length - 1]!;
  return withDir(realRoot, segments.slice(0, -1), ctx, (fd) => fn(fd, name));
}
