/**
 * Content-and-metadata snapshots of a directory tree, taken by lstat and never through a link, so
 * a test can prove a call changed nothing. `WatchedTree` goes further for trees ServerFS must never
 * touch at all: every object's access time is pinned far in the past, and since the filesystem
 * (relatime) moves an access time older than the modification time on the next read or listing, a
 * single read of a file or a directory there shows up too.
 */
import { createHash } from "node:crypto";
import { type BigIntStats, lstatSync, lutimesSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";

/** One line per object, keyed by path relative to the root (`""` is the root itself). */
export type Snapshot = Record<string, string>;

/** Whole seconds, so that re-pinning reproduces the exact nanosecond values. */
const PINNED_ATIME = 946_684_800; // 2000-01-01
const PINNED_MTIME = 1_700_000_000; // 2023-11-14

function kindOf(st: BigIntStats): string {
  if (st.isSymbolicLink()) return "symlink";
  if (st.isDirectory()) return "dir";
  if (st.isFile()) return "file";
  return "other";
}

/**
 * Identity (inode, link count), type, mode, owner, size, mtime and the bytes (files) or target
 * (symlinks) of every object. ctime is left out: pinning times changes it. Each object is stat-ed
 * before it is read, so a recorded access time is the one the object had before this snapshot.
 */
export function snapshotTree(root: string, opts: { atime: boolean } = { atime: false }): Snapshot {
  const out: Snapshot = {};
  const visit = (rel: string): void => {
    const p = rel === "" ? root : join(root, rel);
    const st = lstatSync(p, { bigint: true });
    const kind = kindOf(st);
    const parts = [kind, `ino=${st.ino}`, `nlink=${st.nlink}`, `mode=${st.mode.toString(8)}`, `uid=${st.uid}`, `gid=${st.gid}`];
    parts.push(`size=${st.size}`, `mtime=${st.mtimeNs}`);
    if (opts.atime) parts.push(`atime=${st.atimeNs}`);
    if (kind === "symlink") parts.push(`target=${readlinkSync(p)}`);
    if (kind === "file") parts.push(`sha256=${createHash("sha256").update(readFileSync(p)).digest("hex")}`);
    out[rel] = parts.join(" ");
    if (kind === "dir") for (const name of readdirSync(p).sort()) visit(rel === "" ? name : `${rel}/${name}`);
  };
  visit("");
  return out;
}

function pinTimes(root: string): void {
  const visit = (p: string): void => {
    const st = lstatSync(p);
    if (st.isDirectory()) for (const name of readdirSync(p)) visit(join(p, name));
    lutimesSync(p, PINNED_ATIME, PINNED_MTIME);
  };
  visit(root);
}

/** A tree that must stay exactly as it is: not created in, changed, deleted from, read or listed. */
export class WatchedTree {
  readonly baseline: Snapshot;

  constructor(readonly root: string) {
    pinTimes(root);
    this.baseline = this.current();
  }

  /** The tree now, access times included; taking it reads the tree, so times are pinned again after. */
  current(): Snapshot {
    const snap = snapshotTree(this.root, { atime: true });
    pinTimes(this.root);
    return snap;
  }
}
