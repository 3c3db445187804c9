/**
 * The few libc calls Bun has no API for, through `bun:ffi`: `flock` (the writer lease and the
 * instance lock), `getsockopt(SO_PEERCRED)` (the Bridge's peer check), `poll` (seeing stdin's
 * writer hang up while stdin is not being read) and `getdents64` with `lseek` (reading a directory
 * through the walk's own handle, src/shared/ffi/dirents.ts). errno is read right
 * after the call from the calling thread's `__errno_location()`.
 */
import { dlopen, FFIType, ptr, read } from "bun:ffi";

const libc = dlopen("libc.so.6", {
  flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  getsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  __errno_location: { args: [], returns: FFIType.ptr },
  poll: { args: [FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i32 },
  getdents64: { args: [FFIType.i32, FFIType.ptr, FFIType.u64], returns: FFIType.i64 },
  lseek: { args: [FFIType.i32, FFIType.i64, FFIType.i32], returns: FFIType.i64 },
});

/** `getdents64(fd, buffer, size)`: bytes of `linux_dirent64` records written, 0 at the end, −1 on error. */
export const getdents64 = (fd: number, buffer: Uint8Array): number => Number(libc.symbols.getdents64(fd, ptr(buffer), buffer.byteLength));

/** `lseek(fd, 0, SEEK_SET)`: false on error. */
export const rewind = (fd: number): boolean => Number(libc.symbols.lseek(fd, 0, 0)) === 0;

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

const POLLERR = 0x008;
const POLLHUP = 0x010;
const POLLRDHUP = 0x2000;

/**
 * Whether the other end of the pipe or socket `fd` has hung up, without reading from it and
 * without waiting: a pipe whose writers are all gone reports POLLHUP even while data remains
 * unread, a socket shut for writing POLLRDHUP.
 */
export function peerHungUp(fd: number): boolean {
  // struct pollfd { int fd; short events; short revents; }
  const pfd = new Int16Array(4);
  new Int32Array(pfd.buffer, 0, 1)[0] = fd;
  pfd[2] = POLLRDHUP;
  if (libc.symbols.poll(ptr(pfd), 1, 0) < 0) return false;
  return (pfd[3]! & (POLLHUP | POLLRDHUP | POLLERR)) !== 0;
}
