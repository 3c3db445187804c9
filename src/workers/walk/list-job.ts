/**
 * One page of list_directory (docs/mcp-tools.md#list_directory): a directory's admitted entries in byte order,
 * each stat-ed without following links. Small directories are listed on the main thread; a large
 * one (a high `offset` in 300,000 entries costs seconds) is a job of the walk pool.
 */
import type { BigIntStats } from "node:fs";
import { lstatAt, withDir } from "../../shared/fs/dir-handle.ts";
import { osCode, osError } from "../../shared/fs/os-errors.ts";
import { entryType, modifiedAt, sizeOf } from "../../shared/fs/stat.ts";
import type { PathPolicy } from "../../shared/path/policy.ts";
import { childPath, readDirEntries } from "./dir-entries.ts";
import { type StopFlag, throwIfStopped } from "./stop-flag.ts";
import { policyOf, type TreeTarget } from "./tree-job.ts";

export interface ListedEntry {
  name: string;
  path: string;
  type: "file" | "directory" | "symlink" | "other";
  size: number | null;
  modified_at: string | null;
}

export interface ListPage {
  entries: ListedEntry[];
  hasMore: boolean;
}

export interface ListJob {
  target: TreeTarget;
  offset: number;
  limit: number;
}

/** A no-follow stat of `name`, or null when it vanished since the directory was read. */
function statEntry(dirFd: number, name: string, where: string): BigIntStats | null {
  try {
    return lstatAt(dirFd, name);
  } catch (e) {
    if (osCode(e) === "ENOENT") return null;
    throw osError(e, "read", where);
  }
}

/**
 * Only the page's entries are stat-ed (plus one, for `has_more`), in sorted order: an entry that
 * vanished since the directory was read drops out of the order. The entries before `offset` count
 * as the directory read found them, as if each had been stat-ed at that instant, so a high offset
 * costs one directory read and a sort, not a system call per skipped entry.
 */
export function listPage(dirFd: number, dirPath: string, policy: PathPolicy, job: ListJob, stop: StopFlag | null): ListPage {
  const { offset, limit } = job;
  const where = job.target.where;
  let names: string[];
  try {
    names = readDirEntries(dirFd)
      .map((e) => e.name)
      .filter((name) => policy.admitsChild(dirPath, name));
  } catch (e) {
    throw osError(e, "read", where);
  }
  const entries: ListedEntry[] = [];
  for (let i = offset; i < names.length; i++) {
    if (stop) throwIfStopped(stop);
    const name = names[i]!;
    const st = statEntry(dirFd, name, where);
    if (st === null) continue;
    if (entries.length === limit) return { entries, hasMore: true };
    entries.push({ name, path: childPath(dirPath, name), type: entryType(st), size: sizeOf(st), modified_at: modifiedAt(st) });
  }
  return { entries, hasMore: false };
}

/** The pool's entry point: opens the target afresh (race-safe, from the root) and lists it. */
export function runListJob(job: ListJob, stop: StopFlag): ListPage {
  const { target } = job;
  return withDir(target.realRoot, target.segments, { where: target.where, side: "read" }, (fd) => listPage(fd, target.path, policyOf(target), job, stop));
}
