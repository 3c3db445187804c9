/**
 * The walk under find_files and search_text (docs/mcp-tools.md#read-tools): depth-first, each directory's
 * entries in ascending UTF-8 byte order, a subdirectory's contents right after its own entry.
 * A directory's names are read completely before any child is opened, so the walk holds one
 * handle per level of the current descent, never one per pending sibling. Symlinks are never
 * entered; hidden (unless allowed), reserved and denied entries are neither yielded nor descended;
 * entries that vanish, cannot be opened or are not UTF-8 are skipped silently. Running out of
 * descriptors fails the whole walk (RESOURCE_EXHAUSTED).
 *
 * A walk run as one part of a parallel walk (`src/main/mcp/fs/parallel-walk.ts`) stops entering subdirectories once
 * it has read `deferAfter` entries: it yields each further one as deferred, for another part to walk,
 * and finishes only the files of the directories it already holds.
 */
import { isServerFsError } from "../../shared/errors.ts";
import { closeQuietly, lstatAt, openDirAt } from "../../shared/fs/dir-handle.ts";
import { isExhaustion, osError } from "../../shared/fs/os-errors.ts";
import { entryType } from "../../shared/fs/stat.ts";
import type { PathPolicy } from "../../shared/path/policy.ts";
import { childPath, type DirEntry, type EntryKind, readDirEntries } from "./dir-entries.ts";
import { type StopFlag, throwIfStopped } from "./stop-flag.ts";

export interface WalkFile {
  kind: "file";
  name: string;
  /** Normalized path from the workdir root. */
  path: string;
  /** Path below the walk's start directory. */
  rel: string;
  /** Handle of the directory holding the file; valid only until the walk resumes. */
  dirFd: number;
}

/** An admitted subdirectory this walk leaves to another part (see `deferAfter`). */
export interface WalkDeferred {
  kind: "deferred";
  path: string;
  rel: string;
}

export interface WalkOptions {
  policy: PathPolicy;
  /** `alias:path` of the start directory, for messages. */
  where: string;
  /** Normalized path of the start directory (`""` = root). */
  basePath: string;
  /** Path of the start directory below the directory the call named (`""` = that directory). */
  baseRel?: string;
  /** Stop (setting `capped`) rather than visit more entries than this. */
  maxEntries?: number;
  /** Once this many entries are read, admitted subdirectories are yielded as deferred, not entered. */
  deferAfter?: number;
  /** Further pruning of admitted subdirectories (search: VCS directories, exclusion globs). */
  enters?: (name: string, rel: string) => boolean;
  /** Polled before every entry: a raised flag ends the walk (its handles closed) with `Stopped`. */
  stop: StopFlag;
}

export interface WalkStats {
  /** Entries read from directories so far, admitted or not. */
  entries: number;
  /** The walk stopped at `maxEntries`. */
  capped: boolean;
}

interface Level {
  fd: number;
  path: string;
  rel: string;
  entries: DirEntry[];
  next: number;
}

/** A kind the directory did not report, from a no-follow stat; null when the entry vanished. */
function statKind(dirFd: number, name: string, where: string): EntryKind | null {
  try {
    return entryType(lstatAt(dirFd, name));
  } catch (e) {
    if (isExhaustion(e)) throw osError(e, "read", where);
    return null;
  }
}

/** The entries of a subdirectory, or null when it cannot be opened or read (skipped silently). */
function descend(parentFd: number, name: string, where: string): { fd: number; entries: DirEntry[] } | null {
  let fd: number;
  try {
    fd = openDirAt(parentFd, name, { where, side: "read" });
  } catch (e) {
    if (isServerFsError(e) && e.code === "RESOURCE_EXHAUSTED") throw e;
    return null;
  }
  try {
    return { fd, entries: readDirEntries(fd) };
  } catch (e) {
    closeQuietly(fd);
    if (isExhaustion(e)) throw osError(e, "read", where);
    return null;
  }
}

/**
 * Yields the regular files below the directory `startFd` holds (the caller keeps that handle), and
 * the deferred subdirectories in their place in walk order. Breaking out of the iteration closes
 * every handle the walk opened.
 */
export function* walkFiles(startFd: number, opts: WalkOptions, stats: WalkStats): Generator<WalkFile | WalkDeferred, void, undefined> {
  let startEntries: DirEntry[];
  try {
    startEntries = readDirEntries(startFd);
  } catch (e) {
    throw osError(e, "read", opts.where);
  }
  const stack: Level[] = [{ fd: startFd, path: opts.basePath, rel: opts.baseRel ?? "", entries: startEntries, next: 0 }];
  try {
    while (stack.length > 0) {
      throwIfStopped(opts.stop);
      const level = stack[stack.length - 1]!;
      const entry = level.entries[level.next++];
      if (entry === undefined) {
        stack.pop();
        if (level.fd !== startFd) closeQuietly(level.fd);
        continue;
      }
      if (opts.maxEntries !== undefined && stats.entries >= opts.maxEntries) {
        stats.capped = true;
        return;
      }
      stats.entries++;
      if (!opts.policy.admitsChild(level.path, entry.name)) continue;
      const kind = entry.kind === "unknown" ? statKind(level.fd, entry.name, opts.where) : entry.kind;
      const path = childPath(level.path, entry.name);
      const rel = childPath(level.rel, entry.name);
      if (kind === "file") {
        yield { kind, name: entry.name, path, rel, dirFd: level.fd };
      } else if (kind === "directory" && (opts.enters?.(entry.name, rel) ?? true)) {
        if (opts.deferAfter !== undefined && stats.entries >= opts.deferAfter) {
          yield { kind: "deferred", path, rel };
          continue;
        }
        const child = descend(level.fd, entry.name, opts.where);
        if (child) stack.push({ fd: child.fd, path, rel, entries: child.entries, next: 0 });
      }
    }
  } finally {
    for (const level of stack) if (level.fd !== startFd) closeQuietly(level.fd);
  }
}
