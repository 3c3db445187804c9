/** What ServerFS reports about one filesystem object: its type, size, time and revision token. */
import { createHash } from "node:crypto";
import { type BigIntStats, constants } from "node:fs";

export const ENTRY_TYPES = ["file", "directory", "symlink", "other"] as const;
export type EntryType = (typeof ENTRY_TYPES)[number];

const S_IFMT = BigInt(constants.S_IFMT);
const S_IFREG = BigInt(constants.S_IFREG);
const S_IFDIR = BigInt(constants.S_IFDIR);
const S_IFLNK = BigInt(constants.S_IFLNK);

export function entryType(st: BigIntStats): EntryType {
  const fmt = st.mode & S_IFMT;
  if (fmt === S_IFREG) return "file";
  if (fmt === S_IFDIR) return "directory";
  if (fmt === S_IFLNK) return "symlink";
  return "other";
}

/** docs/mcp-tools.md#revisions: nine exact integers from a no-follow stat, hashed; never a float. */
export function revisionOf(st: BigIntStats): string {
  const material = [st.dev, st.ino, st.mode, st.uid, st.gid, st.size, st.mtimeNs, st.ctimeNs, st.nlink].join(":");
  return `v1:${createHash("sha256").update(material).digest("hex").slice(0, 16)}`;
}

/** RFC 3339 UTC with whole seconds, e.g. `2026-09-17T01:20:30Z`. */
export function modifiedAt(st: BigIntStats): string {
  const seconds = st.mtimeNs / 1_000_000_000n;
  return `${new Date(Number(seconds) * 1000).toISOString().slice(0, 19)}Z`;
}

export const sizeOf = (st: BigIntStats): number | null => (entryType(st) === "file" ? Number(st.size) : null);
