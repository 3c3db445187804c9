/**
 * Extended attributes on open descriptors, through `bun:ffi` (Node and Bun have no xattr API).
 * An atomic replace carries the target's attributes (ACLs included) over to the temp file
 * (docs/mcp-tools.md#atomic-publish). Names are kept as latin1 strings so that any byte survives the round
 * trip; nothing here throws: callers decide what a failure means.
 */
import { dlopen, FFIType, ptr } from "bun:ffi";
import { EINTR, errno } from "./libc.ts";

const libc = dlopen("libc.so.6", {
  flistxattr: { args: [FFIType.i32, FFIType.ptr, FFIType.u64], returns: FFIType.i64_fast },
  fgetxattr: { args: [FFIType.i32, FFIType.ptr, FFIType.ptr, FFIType.u64], returns: FFIType.i64_fast },
  fsetxattr: { args: [FFIType.i32, FFIType.ptr, FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i32 },
  fremovexattr: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
});

const ERANGE = 34;
const ENOTSUP = 95;
/** Attributes can grow between the size query and the read; give up after a few tries. */
const ATTEMPTS = 4;

const cName = (name: string) => Buffer.from(`${name}\0`, "latin1");
const bufPtr = (b: Uint8Array) => (b.length === 0 ? null : ptr(b));

/** Calls `query(buffer)` first with no buffer for the size, then with one, retrying on growth. */
function sized(query: (buf: Uint8Array | null, size: number) => number): Uint8Array | null {
  for (let i = 0; i < ATTEMPTS; i++) {
    const size = query(null, 0);
    if (size < 0) {
      if (errno() === EINTR) continue;
      return null;
    }
    const buf = new Uint8Array(size);
    const got = size === 0 ? 0 : query(buf, size);
    if (got >= 0) return buf.subarray(0, got);
    const e = errno();
    if (e !== ERANGE && e !== EINTR) return null;
  }
  return null;
}

/** The attribute names of `fd`; `[]` where the filesystem has no xattr support; null on failure. */
export function listXattrs(fd: number): string[] | null {
  let unsupported = false;
  const raw = sized((buf, size) => {
    const r = Number(libc.symbols.flistxattr(fd, buf ? bufPtr(buf) : null, size));
    if (r < 0 && errno() === ENOTSUP) unsupported = true;
    return r;
  });
  if (raw === null) return unsupported ? [] : null;
  return Buffer.from(raw)
    .toString("latin1")
    .split("\0")
    .filter((n) => n !== "");
}

export function getXattr(fd: number, name: string): Uint8Array | null {
  const n = cName(name);
  return sized((buf, size) => Number(libc.symbols.fgetxattr(fd, ptr(n), buf ? bufPtr(buf) : null, size)));
}

export function setXattr(fd: number, name: string, value: Uint8Array): boolean {
  return libc.symbols.fsetxattr(fd, ptr(cName(name)), bufPtr(value), value.length, 0) === 0;
}

export function removeXattr(fd: number, name: string): boolean {
  return libc.symbols.fremovexattr(fd, ptr(cName(name))) === 0;
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

/**
 * Makes `to` carry exactly `from`'s attributes: each is set unless already equal (a security label
 * the kernel gave the new file is left alone when it matches), and any other attribute the new
 * file inherited (a default ACL, say) is removed, except kernel-managed `security.*` ones.
 */
export function copyXattrs(from: number, to: number): boolean {
  const names = listXattrs(from);
  const present = listXattrs(to);
  if (names === null || present === null) return false;
  for (const name of names) {
    const value = getXattr(from, name);
    if (value === null) return false;
    const current = present.includes(name) ? getXattr(to, name) : null;
    if (current !== null && sameBytes(current, value)) continue;
    if (!setXattr(to, name, value)) return false;
  }
  for (const name of present) {
    if (names.includes(name) || name.startsWith("security.")) continue;
    if (!removeXattr(to, name)) return false;
  }
  return true;
}
