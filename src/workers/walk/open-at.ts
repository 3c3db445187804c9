/**
 * `openat(2)` relative to a directory handle, through `bun:ffi` (docs/mcp-tools.md#traversal-by-handle-and-symlinks names it as
 * the reference form). Search opens every file of a tree, and a path through
 * `/proc/self/fd/<fd>/<name>` costs the kernel a procfs lookup per open; `openat` does not.
 * Failures throw like Node's fs calls do (an Error with `code` = the errno name), so the one
 * OS-error mapping applies unchanged.
 */
import { dlopen, FFIType, ptr } from "bun:ffi";
import { constants } from "node:os";
import { errno } from "../../shared/ffi/libc.ts";

const libc = dlopen("libc.so.6", {
  openat: { args: [FFIType.i32, FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
});

const ERRNO_NAMES = new Map(Object.entries(constants.errno).map(([name, n]) => [n, name]));
const EINTR = constants.errno.EINTR;

/** A directory entry's name is at most 255 bytes; this leaves room for the terminating NUL. */
const nameBuffer = Buffer.alloc(1024);

function failure(code: string): Error {
  return Object.assign(new Error("openat failed"), { code });
}

/** Opens the single name `entry` (no `/`) inside the directory `dirFd` holds. */
export function openAt(dirFd: number, entry: string, flags: number): number {
  const length = nameBuffer.write(entry, 0, "utf8");
  if (length >= nameBuffer.length - 1 || entry.includes("\0") || entry.includes("/")) throw failure("EINVAL");
  nameBuffer[length] = 0;
  for (;;) {
    const fd = libc.symbols.openat(dirFd, ptr(nameBuffer), flags);
    if (fd >= 0) return fd;
    const e = errno();
    if (e !== EINTR) throw failure(ERRNO_NAMES.get(e) ?? "EUNKNOWN");
  }
}
