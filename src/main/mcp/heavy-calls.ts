/**
 * Heavy calls queue, they are not refused (docs/reliability.md, "Hardening"): walks, searches,
 * listings of large directories and line seeks run at most `max_concurrent_heavy_calls` at once;
 * the rest wait in arrival order within their own deadline. Walks then also wait for the
 * `search_workers` threads of the walk pool, one per part of the walk. RESOURCE_EXHAUSTED keeps its meaning (descriptors).
 */
import type { Limits } from "../../shared/config/schema.ts";
import { type PartJob, type WalkAnswer, type WalkLimits, walkInParts } from "./fs/parallel-walk.ts";
import { type Job, WalkPool } from "./fs/walk-pool.ts";
import { type WaitOptions, WaitQueue } from "./wait-queue.ts";

export class HeavyCalls {
  private readonly gate: WaitQueue;
  private readonly pool: WalkPool;

  constructor(limits: Limits) {
    this.gate = new WaitQueue(limits.max_concurrent_heavy_calls);
    this.pool = new WalkPool(limits.search_workers);
  }

  /** Runs `fn` once a heavy-call unit is free. */
  async run<R>(opts: WaitOptions, fn: () => Promise<R>): Promise<R> {
    const release = await this.gate.acquire(opts);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  /** Runs a walk-pool job as a heavy call. */
  walk<R>(opts: WaitOptions, job: Job<R>): Promise<R> {
    return this.run(opts, () => this.pool.run(opts, job));
  }

  /** Ends the walk pool's threads (a server that stops without its process ending: the tests' in-process one). */
  close(): void {
    this.pool.close();
  }

  /** Runs a walk as one heavy call, its parts spread over the walk pool (`fs/parallel-walk.ts`). */
  walkParts<M>(opts: WaitOptions, limits: WalkLimits, job: PartJob<M>): Promise<WalkAnswer<M>> {
    return this.run(opts, () => walkInParts(this.pool, opts, limits, job));
  }
}
