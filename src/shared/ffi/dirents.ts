/**
 * Reading a directory through an open handle with `getdents64(2)`: one pass over the kernel's records,
 * where `readdir` of `/proc/self/fd/<fd>` would open the directory a second time (docs/performance.md
 * "Find"). Names come as their raw bytes decoded strictly, so a name that is not valid UTF-8 is known
 * as such (`name: null`) without a second read; `.` and `..` are left out.
 */
import { constants } from "node:os";
import { decodeStrict } from "../utf8.ts";
import { errno, getdents64, rewind } from "./libc.ts";

/** The `d_type` values of `linux_dirent64`; 0 (`DT_UNKNOWN`) where the filesystem reports none. */
export const DT = { FIFO: 1, CHR: 2, DIR: 4, BLK: 6, REG: 8, LNK: 10, SOCK: 12 } as const;

export interface RawDirent {
  /** null: the name is not valid UTF-8. */
  name: string | null;
  type: number;
}

/** 64 KiB holds about 2,000 records of short names; a larger directory takes several calls. */
const BUFFER_BYTES = 65_536;
/** One buffer per thread (this module is instantiated once per worker), reused by every read. */
let buffer: Buffer | null = null;

const ERRNO_NAMES = new Map(Object.entries(constants.errno).map(([name, n]) => [n, name]));

/** An error shaped like Node's fs errors (`code`, `errno`), so callers map it as they map those. */
function osError(call: string, e: number): Error {
  const code = ERRNO_NAMES.get(e) ?? "EIO";
  return Object.assign(new Error(`${call} failed: ${code}`), { code, errno: -e, syscall: call });
}

function nameAt(buf: Buffer, start: number, end: number): string | null {
  for (let i = start; i < end; i++) if (buf[i]! >= 0x80) return decodeStrict(buf.subarray(start, end));
  return buf.toString("latin1", start, end);
}

/** Every entry of the directory `dirFd`, in the kernel's order. Reads from offset 0 whatever the handle's position. */
export function readDirents(dirFd: number): RawDirent[] {
  buffer ??= Buffer.allocUnsafe(BUFFER_BYTES);
  const buf = buffer;
  if (!rewind(dirFd)) throw osError("lseek", errno());
  const out: RawDirent[] = [];
  for (;;) {
    const n = getdents64(dirFd, buf);
    if (n === 0) return out;
    if (n < 0) throw osError("getdents64", errno());
    // struct linux_dirent64 { u64 d_ino; s64 d_off; u16 d_reclen; u8 d_type; char d_name[]; } (NUL-terminated)
    for (let at = 0; at < n; ) {
      const reclen = buf.readUInt16LE(at + 16);
      const nameStart = at + 19;
      const nameEnd = buf.indexOf(0, nameStart);
      const isDot = nameEnd - nameStart <= 2 && buf[nameStart] === 0x2e && (nameEnd - nameStart === 1 || buf[nameStart + 1] === 0x2e);
      if (!isDot) out.push({ name: nameAt(buf, nameStart, nameEnd), type: buf[at + 18]! });
      at += reclen;
    }
  }
}
