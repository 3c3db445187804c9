/**
 * Provider events are appended in batches (docs/events.md#limits): handed to the event writer at
 * least every 250 ms, at 64 buffered events, and always before any state change of the task — one
 * transaction per batch, in emission order. The hand-off does not wait for the commit, so the next
 * batch is parsed while this one commits (docs/decisions.md, "The event writer"); `settled()` is
 * what a state change waits for. At most `MAX_IN_FLIGHT` batches of a run are handed over and not
 * yet committed: beyond that `backlog()` holds the reading of the provider's stream, so no batch
 * queues behind more than one other of its run and the flush bound stays a bound on the commit.
 * Once a batch breaks a limit the rest of the run's events are dropped and the breaking code is kept
 * for the run to end with.
 */
import type { ErrorCode } from "../shared/errors.ts";

/**
 * Commits one batch, payloads already compact JSON; resolves to the code of the first event that
 * broke a limit, if any. Calls commit in the order they are made.
 */
export type CommitBatch = (types: string[], payloadJsons: string[]) => Promise<ErrorCode | null>;

export interface BatcherOptions {
  maxEvents: number;
  intervalMs: number;
}

export const DEFAULT_BATCHING: BatcherOptions = { maxEvents: 64, intervalMs: 250 };

/** One batch committing while the next fills: the overlap the event writer is for, and no deeper queue. */
const MAX_IN_FLIGHT = 2;

export class EventBatcher {
  // two parallel arrays rather than an object per event: the batch crosses to the event writer as is
  private types: string[] = [];
  private jsons: string[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  private brokenBy: ErrorCode | null = null;
  private committed: Promise<void> = Promise.resolve();
  /** Handed over, not yet committed, oldest first (the writer commits in that order). */
  private readonly inFlight: Promise<void>[] = [];

  constructor(
    private readonly commit: CommitBatch,
    private readonly onCommitted: () => void,
    private readonly onBroken: (code: ErrorCode) => void,
    private readonly options: BatcherOptions = DEFAULT_BATCHING,
  ) {}

  /** The code a committed batch broke; batches still committing may yet set it (see `settled`). */
  get broken(): ErrorCode | null {
    return this.brokenBy;
  }

  push(eventType: string, payload: Record<string, unknown>): void {
    if (this.brokenBy) return;
    this.types.push(eventType);
    this.jsons.push(JSON.stringify(payload));
    if (this.types.length >= this.options.maxEvents) this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), this.options.intervalMs);
    }
  }

  /** Hands whatever is buffered to the writer, now. Safe to call at any time, including with nothing buffered. */
  flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.types.length === 0) return;
    const batch = this.commit(this.types, this.jsons);
    this.types = [];
    this.jsons = [];
    this.track(batch);
  }

  /**
   * A write of the task's own (its `running` transition) that must commit after the batches
   * before it and before the ones after it: flushes, then makes the write, which `settled()` then
   * waits for too; a code it resolves to ends the run like a broken batch.
   */
  inOrder(write: () => Promise<ErrorCode | null>): void {
    this.flush();
    this.track(write());
  }

  private track(write: Promise<ErrorCode | null>): void {
    const done = write.then((code) => {
      this.onCommitted();
      if (code && !this.brokenBy) {
        this.brokenBy = code;
        this.onBroken(code);
      }
    });
    this.inFlight.push(done);
    void done.then(() => this.inFlight.shift());
    const before = this.committed;
    this.committed = before.then(() => done);
  }

  /** Undefined while fewer than `MAX_IN_FLIGHT` batches are committing, else the oldest one's commit. */
  backlog(): Promise<void> | undefined {
    return this.inFlight.length >= MAX_IN_FLIGHT ? this.inFlight[0] : undefined;
  }

  /** Flushes, then resolves once every batch handed over so far has committed (or broken a limit). */
  settled(): Promise<void> {
    this.flush();
    return this.committed;
  }
}
