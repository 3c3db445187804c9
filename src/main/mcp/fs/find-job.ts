/**
 * The walk of find_files (docs/mcp-tools.md#find_files), run in a walk-pool worker: regular files below a
 * directory whose basename matches a glob, in walk order, bounded by `limit + 1` matches and by
 * `maxEntries` entries visited.
 */
import { closeQuietly, openDirPath } from "../../../shared/fs/dir-handle.ts";
import { globMatcher } from "../../../shared/path/glob.ts";
import { type StopFlag, throwIfStopped } from "./stop-flag.ts";
import { policyOf, type TreeTarget } from "./tree-job.ts";
import { walkFiles, type WalkStats } from "./walk.ts";

export interface FindJob {
  target: TreeTarget;
  pattern: string;
  limit: number;
  maxEntries: number;
}

export interface FindResult {
  matches: { path: string }[];
  truncated: boolean;
}

export function findFiles(job: FindJob, stop: StopFlag): FindResult {
  const { target, limit } = job;
  const matches = globMatcher(job.pattern, { crossSlash: false });
  const stats: WalkStats = { entries: 0, capped: false };
  const found: { path: string }[] = [];
  const fd = openDirPath(target.realRoot, target.segments, { where: target.where, side: "read" });
  try {
    const walk = { policy: policyOf(target), where: target.where, basePath: target.path, maxEntries: job.maxEntries, stop };
    for (const file of walkFiles(fd, walk, stats)) {
      if (!matches(file.name)) continue;
      found.push({ path: file.path });
      if (found.length > limit) break;
    }
  } finally {
    closeQuietly(fd);
  }
  throwIfStopped(stop);
  return { matches: found.slice(0, limit), truncated: found.length > limit || stats.capped };
}
