/**
 * The walk of find_files (docs/mcp-tools.md#find_files), one part at a time in a walk-pool worker
 * (`walk-part.ts`): regular files whose basename matches a glob, in walk order. A part stops at
 * `limit + 1` matches or `maxEntries` entries of its own; the main thread applies both to the
 * parts stitched together.
 */
import { closeQuietly } from "../../shared/fs/dir-handle.ts";
import { globMatcher } from "../../shared/path/glob.ts";
import { type StopFlag, throwIfStopped } from "./stop-flag.ts";
import { policyOf, type TreeTarget } from "./tree-job.ts";
import { type WalkStats, walkFiles } from "./walk.ts";
import { deferredPiece, EMPTY_PART, openPart, type PartResult, type Piece, partBase, type WalkPart } from "./walk-part.ts";

export interface FindJob {
  target: TreeTarget;
  pattern: string;
  limit: number;
  maxEntries: number;
}

export type FindMatch = { path: string };

export function findPart(job: FindJob, part: WalkPart, stop: StopFlag): PartResult<FindMatch> {
  const { target, limit } = job;
  const fd = openPart(target, part);
  if (fd === null) return EMPTY_PART;
  const matches = globMatcher(job.pattern, { crossSlash: false });
  const stats: WalkStats = { entries: 0, capped: false };
  const pieces: Piece<FindMatch>[] = [];
  let found = 0;
  try {
    const walk = { policy: policyOf(target), where: target.where, ...partBase(target, part), maxEntries: job.maxEntries, deferAfter: part.deferAfter, stop };
    for (const item of walkFiles(fd, walk, stats)) {
      if (item.kind === "deferred") pieces.push(deferredPiece(item, stats.entries));
      else if (matches(item.name)) {
        pieces.push({ at: stats.entries, match: { path: item.path } });
        if (++found > limit) break;
      }
    }
  } finally {
    closeQuietly(fd);
  }
  throwIfStopped(stop);
  return { pieces, entries: stats.entries, cut: found > limit || stats.capped };
}
