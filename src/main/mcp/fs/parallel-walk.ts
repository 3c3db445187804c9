/**
 * A walk spread over the walk pool's threads (docs/mcp-tools.md#read-tools, docs/performance.md), with
 * exactly the result of a walk on one thread: the same matches in the same order, the same
 * truncation at `limit + 1` matches or past `maxEntries` entries.
 *
 * The walk is cut into parts (`src/workers/walk/walk-part.ts`). The first walks the call's directory; once a part has
 * read `PART_ENTRIES` entries it stops entering subdirectories and hands each further one back as a
 * deferred part, in its place among the part's matches. Parts run on up to `search_workers` workers
 * at once, earliest in walk order first (a subdirectory's segments compared by bytes are its walk
 * order). The main thread only stitches: a cursor walks the finished parts in order, stepping into a
 * deferred part where it stands, counting entries as the single walk would have, and waits where a
 * part has not finished. The answer is complete as soon as the cursor has passed `limit` matches or
 * `maxEntries` entries, or the whole walk: the parts still running are stopped then (their stop flags
 * raised through the pool), the queued ones never start. Parts that finish ahead of the cursor keep
 * their matches until it reaches them, a bounded number (`HELD_LIMITS`).
 *
 * Each worker walks one part at a time with the one-handle-per-level bound of a walk; a part opens its
 * directory afresh from the workdir's root, one no-follow segment at a time. A part's failure
 * (running out of descriptors) fails the call only if the cursor reaches it, as a single walk that
 * stopped earlier would never have met it; the call's deadline and shutdown end it at once.
 */
import type { Remote } from "comlink";
import type { StopFlag } from "../../../workers/walk/stop-flag.ts";
import type { PartResult, WalkPart } from "../../../workers/walk/walk-part.ts";
import type { WalkApi } from "../../../workers/walk-worker.ts";
import type { WaitOptions } from "../wait-queue.ts";
import type { WalkPool } from "./walk-pool.ts";

/** Entries a part reads before deferring subdirectories: a few milliseconds of walking. */
export const PART_ENTRIES = 1000;
/**
 * Finished parts ahead of the cursor hold their matches until it gets there. Past this many times
 * `limit + 1` such matches, no further part starts until the cursor has caught up, so memory stays
 * a small multiple of what a walk on one thread holds, however slow one early part is.
 */
const HELD_LIMITS = 4;

export type PartJob<M> = (api: Remote<WalkApi>, part: WalkPart, stop: StopFlag) => Promise<PartResult<M>>;

export interface WalkLimits {
  /** The answer holds at most this many matches; one more makes it truncated. */
  limit: number;
  /** Entries past this make the answer truncated (Infinity: no bound). */
  maxEntries: number;
}

export interface WalkAnswer<M> {
  matches: M[];
  truncated: boolean;
}

interface Node<M> {
  below: string[];
  result?: PartResult<M>;
  /** The node of each deferred piece of `result`, by piece index. */
  kids: (Node<M> | undefined)[];
  error?: unknown;
}

/** Where the cursor stands in one part: the next piece, and the part's entries counted so far. */
interface Frame<M> {
  node: Node<M>;
  next: number;
  counted: number;
}

const utf8 = (s: string) => Buffer.from(s, "utf8");

/** Walk order of two directories below the call's directory: segment by segment, by UTF-8 bytes. */
export function walkOrder(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return Buffer.compare(utf8(a[i]!), utf8(b[i]!));
  }
  return a.length - b.length;
}

export function walkInParts<M>(pool: WalkPool, opts: WaitOptions, limits: WalkLimits, job: PartJob<M>): Promise<WalkAnswer<M>> {
  const ended = new AbortController();
  const partOpts: WaitOptions = { signal: AbortSignal.any([opts.signal, ended.signal]), deadline: opts.deadline };
  // One worker gains nothing from parts: it walks the whole tree as one.
  const deferAfter = pool.size > 1 ? PART_ENTRIES : undefined;
  const root: Node<M> = { below: [], kids: [] };
  const queued: Node<M>[] = [root];
  const frames: Frame<M>[] = [{ node: root, next: 0, counted: 0 }];
  const matches: M[] = [];
  let entries = 0;
  let running = 0;
  /** Matches in finished parts that the cursor has not reached yet. */
  let held = 0;

  return new Promise<WalkAnswer<M>>((resolve, reject) => {
    const end = (outcome: () => void) => {
      if (ended.signal.aborted) return;
      ended.abort();
      outcome();
    };
    const answer = (truncated: boolean) => end(() => resolve({ matches: matches.slice(0, limits.limit), truncated }));

    /** Moves the cursor as far as finished parts allow; ends the walk when the answer is known. */
    const advance = () => {
      while (frames.length > 0) {
        const frame = frames[frames.length - 1]!;
        const { result, error } = frame.node;
        if (error !== undefined) return end(() => reject(error));
        if (result === undefined) return;
        if (frame.next === result.pieces.length) {
          entries += result.entries - frame.counted;
          frames.pop();
          if (result.cut || entries > limits.maxEntries) return answer(true);
          continue;
        }
        const index = frame.next++;
        const piece = result.pieces[index]!;
        entries += piece.at - frame.counted;
        frame.counted = piece.at;
        if (entries > limits.maxEntries) return answer(true);
        if ("match" in piece) {
          held--;
          matches.push(piece.match);
          if (matches.length > limits.limit) return answer(true);
        } else frames.push({ node: frame.node.kids[index]!, next: 0, counted: 0 });
      }
      answer(false);
    };

    const finished = (node: Node<M>, result: PartResult<M>) => {
      node.result = result;
      for (const p of result.pieces) if ("match" in p) held++;
      node.kids = result.pieces.map((p) => ("below" in p ? { below: p.below, kids: [] } : undefined));
      for (const kid of node.kids) if (kid) queued.push(kid);
      queued.sort((a, b) => walkOrder(a.below, b.below));
    };

    const failed = (node: Node<M>, e: unknown) => {
      const callOver = opts.signal.aborted || (opts.deadline !== undefined && performance.now() >= opts.deadline.at);
      if (callOver) end(() => reject(e));
      else node.error = e;
    };

    const pump = () => {
      // With no part running, the first queued one is the part the cursor waits for: it always starts.
      const holding = () => held > HELD_LIMITS * (limits.limit + 1) && running > 0;
      while (!ended.signal.aborted && running < pool.size && queued.length > 0 && !holding()) {
        const node = queued.shift()!;
        running++;
        void pool
          .run(partOpts, (api, stop) => job(api, { below: node.below, deferAfter }, stop))
          .then(
            (result) => finished(node, result),
            (e) => failed(node, e),
          )
          .finally(() => {
            running--;
            if (ended.signal.aborted) return;
            advance();
            pump();
          });
      }
    };
    pump();
  });
}
