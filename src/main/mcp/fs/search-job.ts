/**
 * The walk and scan of search_text (docs/mcp-tools.md#search_text), run in a walk-pool worker: a literal
 * search over the files of a walk, stopping at `limit + 1` hits. The deadline is the main
 * thread's: it raises the stop flag, which the walk polls before every entry.
 */
import { closeQuietly, openDirPath } from "../../../shared/fs/dir-handle.ts";
import { type LineHit, LiteralSearch } from "./literal-search.ts";
import { SearchFileReader } from "./search-file-reader.ts";
import { searchGlob } from "./search-glob.ts";
import { type StopFlag, throwIfStopped } from "./stop-flag.ts";
import { policyOf, type TreeTarget } from "./tree-job.ts";
import { walkFiles } from "./walk.ts";

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

export interface SearchResult {
  matches: SearchHit[];
  truncated: boolean;
}

/** One per thread: its scratch buffer is reused by every search this worker runs. */
const reader = new SearchFileReader();

export function searchText(job: SearchJob, stop: StopFlag): SearchResult {
  const { target, limit } = job;
  const policy = policyOf(target);
  const glob = searchGlob(job.glob);
  const search = new LiteralSearch(job.query, job.caseSensitive);
  const matches: SearchHit[] = [];
  const fd = openDirPath(target.realRoot, target.segments, { where: target.where, side: "read" });
  try {
    const walk = {
      policy,
      where: target.where,
      basePath: target.path,
      enters: (name: string, rel: string) => !VCS_DIRS.has(name) && glob.entersDir(name, rel),
      stop,
    };
    for (const file of walkFiles(fd, walk, { entries: 0, capped: false })) {
      if (!glob.admitsFile(file.name, file.rel)) continue;
      const content = reader.read(file.dirFd, file.name, job.maxFileBytes, target.where);
      if (content === null) continue;
      const hits = search.scan(content, limit + 1 - matches.length, stop);
      // Defence in depth: the walk pruned already, but no hit leaves without its own check.
      if (hits.length === 0 || policy.refusal(file.path.split("/")) !== null) continue;
      for (const hit of hits) matches.push({ path: file.path, ...hit });
      if (matches.length > limit) break;
    }
  } finally {
    closeQuietly(fd);
    reader.trim();
  }
  throwIfStopped(stop);
  return { matches: matches.slice(0, limit), truncated: matches.length > limit };
}
