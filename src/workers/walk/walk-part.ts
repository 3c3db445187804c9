/**
 * One part of a parallel walk (docs/mcp-tools.md#read-tools), as a walk-pool worker runs it: the
 * directory the call named, or a subdirectory an earlier part deferred, walked depth-first like the
 * whole walk. What a part finds comes back as pieces in walk order, each tagged with how many entries
 * the part had read by then, so the main thread (`src/main/mcp/fs/parallel-walk.ts`) can stitch the parts back into
 * the one order and entry count of a walk on one thread.
 */
import { isServerFsError } from "../../shared/errors.ts";
import { openDirPath } from "../../shared/fs/dir-handle.ts";
import { childPath } from "./dir-entries.ts";
import type { TreeTarget } from "./tree-job.ts";
import type { WalkDeferred } from "./walk.ts";

export interface WalkPart {
  /** Segments of the part's directory below the call's directory (`[]` = that directory). */
  below: string[];
  /** Entries the part reads before it defers subdirectories; absent: it walks its whole subtree. */
  deferAfter?: number;
}

/** A match, or a subdirectory left to another part; `at` counts the part's entries read so far, this one's included. */
export type Piece<M> = { at: number; match: M } | { at: number; below: string[] };

export interface PartResult<M> {
  pieces: Piece<M>[];
  /** Entries the part read in all. */
  entries: number;
  /** The part stopped before its end (a limit of its own was reached). */
  cut: boolean;
}

export const EMPTY_PART: PartResult<never> = { pieces: [], entries: 0, cut: false };

export const deferredPiece = (d: WalkDeferred, at: number): Piece<never> => ({ at, below: d.rel.split("/") });

/** Where the part's directory sits: its normalized path and its path below the call's directory. */
export function partBase(target: TreeTarget, part: WalkPart): { basePath: string; baseRel: string } {
  const baseRel = part.below.join("/");
  return { basePath: baseRel === "" ? target.path : childPath(target.path, baseRel), baseRel };
}

/**
 * Opens the part's directory afresh from the workdir's root, one no-follow segment at a time. The
 * call's own directory fails the call as before; a deferred one that can no longer be opened (it
 * vanished, or was swapped for a symlink) is skipped, as a walk skips a subdirectory it cannot open.
 * Running out of descriptors fails the call either way.
 */
export function openPart(target: TreeTarget, part: WalkPart): number | null {
  const ctx = { where: target.where, side: "read" as const };
  if (part.below.length === 0) return openDirPath(target.realRoot, target.segments, ctx);
  try {
    return openDirPath(target.realRoot, [...target.segments, ...part.below], ctx);
  } catch (e) {
    if (isServerFsError(e) && e.code === "RESOURCE_EXHAUSTED") throw e;
    return null;
  }
}
