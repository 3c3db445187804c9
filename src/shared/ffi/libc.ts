/**
 * The few libc calls Bun has no API for, through `bun:ffi`: `flock` (the writer lease and the
 * instance lock) and `getsockopt(SO_PEERCRED)` (the Bridge's peer check). errno is read right
 * after the call from the calling thread's `__errno_location()`.
 */
import { dlopen, FFIType, ptr, read } from "bun:ffi";

const libc = dlopen("libc.so.6", {
  flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  getsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  __errno_location: { args: [], returns: FFIType.ptr },
});

export const LOCK_SH = 1;
export const LOCK_EX = 2;
export const LOCK_NB = 4;
export const LOCK_UN = 8;

export const EWOULDBLOCK = 11;
export const EINTR = 4;

/** The calling thread's errno, read right after a failed libc call. */
export function errno(): number {
  const p = libc.symbols.__errno_location();
  return p === null ? -1 : read.i32(p, 0);
}

export type FlockResult = { ok: true } | { ok: false; errno: number };

/** `flock(fd, op)`; retried on EINTR. */
export function flock(fd: number, op: number): FlockResult {
  for (;;) {
    if (libc.symbols.flock(fd, op) === 0) return { ok: true };
    const e = errno();
    if (e !== EINTR) return { ok: false, errno: e };
  }
}

/** Non-blocking exclusive lock: "held" when another open file description has it. */
export function tryLockExclusive(fd: number): "locked" | "busy" | "error" {
  const r = flock(fd, LOCK_EX | LOCK_NB);
  if (r.ok) return "locked";
  return r.errno === EWOULDBLOCK ? "busy" : "error";
}

export function unlock(fd: number): void {
  flock(fd, LOCK_UN);
}

const SOL_SOCKET = 1;
const SO_PEERCRED = 17;

export interface PeerCred {
  pid: number;
  uid: number;
  gid: number;
}

/** The kernel-attested credentials of the process at the other end of a Unix socket. */
export function peerCredentials(socketFd: number): PeerCred | null {
  const cred = new Int32Array(3);
  const len = new Uint32Array([12]);
  if (libc.symbols.getsockopt(socketFd, SOL_SOCKET, SO_PEERCRED, ptr(cred), ptr(len)) !== 0) return null;
  if (len[0] !== 12) return null;
  return { pid: cred[0]!, uid: cred[1]! >>> 0, gid: cred[2]! >>> 0 };
}
