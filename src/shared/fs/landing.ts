/**
 * Where a path an agent names lands in its workdir (docs/agent-requests.md#requests-naming-a-path-outside-the-workdir):
 * decided by where the path resolves, not by how it is spelled. The walk is the handle walk of
 * dir-handle.ts — from a handle on the workdir's real root, one segment at a time relative to its
 * parent's handle — except that a symlink met on the way is read (never opened) and its target
 * walked in its place, as the kernel would when the agent acts on the path. A name that does not
 * exist yet, and everything below it, is taken as spelled: nothing there can be a link.
 *
 * Offers `landingOf(anchor, path)` → the segments under the real root the path lands on, or null
 * when it leaves the workdir or cannot be resolved safely (a `~` path, NUL, a link loop, an
 * unreadable directory). A relative path is taken from the task's start directory; an absolute one
 * must lie under one of the workdir's root spellings. Like the runtimes, it normalizes the spelled
 * path lexically first (`src/../x` is `x`); a link's `..` climbs from where the link really is.
 */
import { readlinkSync } from "node:fs";
import { normalizeAbsolute } from "../redact.ts";
import { at, closeQuietly, lstatAt, openDirAt, openRoot } from "./dir-handle.ts";
import { osCode } from "./os-errors.ts";
import { entryType } from "./stat.ts";

export interface WorkdirAnchor {
  /** The workdir's real root: the walk's trusted handle. */
  realRoot: string;
  /** Other absolute spellings of the root (its configured path); `realRoot` always counts. */
  roots: readonly string[];
  /** The start directory's segments under the real root, where relative paths start. */
  start: readonly string[];
}

/** The kernel's own bound on links in one resolution (MAXSYMLINKS). */
const MAX_LINKS = 40;
const WALK = { where: "requested path", side: "read" } as const;

const parts = (absolute: string): string[] => absolute.split("/").filter((seg) => seg !== "" && seg !== ".");

/**
 * What follows one of the root spellings in `segments` (an absolute path's), or null when they
 * start with none of them. The rest is kept as it is: its `..` are walked, not collapsed.
 */
function underRoots(anchor: WorkdirAnchor, segments: readonly string[]): string[] | null {
  const roots = [anchor.realRoot, ...anchor.roots];
  const sorted = roots.map((r) => parts(normalizeAbsolute(r))).sort((a, b) => b.length - a.length);
  for (const root of sorted) {
    if (root.every((seg, i) => segments[i] === seg)) return segments.slice(root.length);
  }
  return null;
}

/** The spelled path as segments from the real root, normalized lexically; null if it leaves it. */
function spelled(anchor: WorkdirAnchor, path: string): string[] | null {
  if (path === "" || path.includes("\0") || !path.isWellFormed()) return null;
  // whether `~` means a home directory is the runtime's choice: not safely resolvable here
  if (path.startsWith("~")) return null;
  const absolute = path.startsWith("/") ? path : [anchor.realRoot, ...anchor.start, path].join("/");
  return underRoots(anchor, parts(normalizeAbsolute(absolute)));
}

export function landingOf(anchor: WorkdirAnchor, path: string): string[] | null {
  const from = spelled(anchor, path);
  if (from === null) return null;
  let root: number;
  try {
    root = openRoot(anchor.realRoot, WALK.where, WALK.side);
  } catch {
    return null;
  }
  // dirs[i] holds names[0..i) open; names past dirs.length - 1 do not exist (taken as spelled)
  const dirs = [root];
  const names: string[] = [];
  const queue = [...from];
  let links = 0;
  try {
    while (queue.length > 0) {
      const seg = queue.shift()!;
      if (seg === "" || seg === ".") continue;
      const walked = names.length === dirs.length - 1;
      if (seg === "..") {
        if (names.pop() === undefined) return null;
        if (walked) closeQuietly(dirs.pop());
        continue;
      }
      if (!walked) {
        names.push(seg);
        continue;
      }
      const dir = dirs[dirs.length - 1]!;
      let kind: ReturnType<typeof entryType>;
      try {
        kind = entryType(lstatAt(dir, seg));
      } catch (e) {
        if (osCode(e) !== "ENOENT") return null;
        names.push(seg);
        continue;
      }
      if (kind === "symlink") {
        if (++links > MAX_LINKS) return null;
        const target = readlinkSync(at(dir, seg));
        if (target.startsWith("/")) {
          const rest = underRoots(anchor, parts(target));
          if (rest === null) return null;
          // an absolute target starts again from the root
          for (const fd of dirs.splice(1)) closeQuietly(fd);
          names.length = 0;
          queue.unshift(...rest);
        } else queue.unshift(...target.split("/"));
        continue;
      }
      if (kind === "directory") dirs.push(openDirAt(dir, seg, WALK));
      names.push(seg);
    }
    return names;
  } catch {
    return null;
  } finally {
    for (const fd of dirs) closeQuietly(fd);
  }
}
