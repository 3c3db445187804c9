/**
 * The walk and scan of search_text (docs/mcp-tools.md#search_text), one part at a time in a
 * walk-pool worker (`walk-part.ts`): a literal search over the files of the part's walk, stopping at
 * `limit + 1` hits of its own; the main thread applies the limit to the parts stitched together.
 * The deadline is the main thread's: it raises the stop flag, which the walk polls before every entry.
 */
import { closeQuietly } from "../../shared/fs/dir-handle.ts";
import { type LineHit, LiteralSearch } from "./literal-search.ts";
import { SearchFileReader } from "./search-file-reader.ts";
import { searchGlob } from "./search-glob.ts";
import { type StopFlag, throwIfStopped } from "./stop-flag.ts";
import { policyOf, type TreeTarget } from "./tree-job.ts";
import { walkFiles } from "./walk.ts";
import { deferredPiece, EMPTY_PART, openPart, type PartResult, type Piece, partBase, type WalkPart } from "./walk-part.ts";

/** Never entered below the search directory, even with hidden paths allowed. */
const VCS_DIRS = new Set([".git", ".hg", ".svn"]);

export interface SearchJob {
  target: TreeTarget;
  query: string;
  glob: string | null;
  caseSensitive: boolean;
  limit: number;
  maxFileBytes: number;
}

export type SearchHit = { path: string } & LineHit;

/** One per thread: its scratch buffer is reused by every search this worker runs. */
const reader = new SearchFileReader();

export function searchPart(job: SearchJob, part: WalkPart, stop: StopFlag): PartResult<SearchHit> {
  const { target, limit } = job;
  const fd = openPart(target, part);
  if (fd === null) return EMPTY_PART;
  const policy = policyOf(target);
  const glob = searchGlob(job.glob);
  const search = new LiteralSearch(job.query, job.caseSensitive);
  const stats = { entries: 0, capped: false };
  const pieces: Piece<SearchHit>[] = [];
  let found = 0;
  try {
    const walk = {
      policy,
      where: target.where,
      ...partBase(target, part),
      deferAfter: part.deferAfter,
      enters: (name: string, rel: string) => !VCS_DIRS.has(name) && glob.entersDir(name, rel),
      stop,
    };
    for (const item of walkFiles(fd, walk, stats)) {
      if (item.kind === "deferred") {
        pieces.push(deferredPiece(item, stats.entries));
        continue;
      }
      if (!glob.admitsFile(item.name, item.rel)) continue;
      const content = reader.read(item.dirFd, item.name, job.maxFileBytes, target.where);
      if (content === null) continue;
      const hits = search.scan(content, limit + 1 - found, stop);
      // Defence in depth: the walk pruned already, but no hit leaves without its own check.
      if (hits.length === 0 || policy.refusal(item.path.split("/")) !== null) continue;
      for (const hit of hits) pieces.push({ at: stats.entries, match: { path: item.path, ...hit } });
      found += hits.length;
      if (found > limit) break;
    }
  } finally {
    closeQuietly(fd);
    reader.trim();
  }
  throwIfStopped(stop);
  return { pieces, entries: stats.entries, cut: found > limit };
}
