/**
 * Provider events are appended in batches (docs/events.md#limits): flushed at least every 250 ms, at 64
 * buffered events, and always before any state change of the task — one transaction per batch, in
 * emission order. Once a batch breaks a limit the rest of the run's events are dropped and the
 * breaking code is kept for the run to end with.
 */
import type { ErrorCode } from "../shared/errors.ts";

export interface PendingEvent {
  event_type: string;
  payload: Record<string, unknown>;
}

/** Commits one batch; returns the code of the first event that broke a limit, if any. */
export type CommitBatch = (events: PendingEvent[]) => ErrorCode | null;

export interface BatcherOptions {
  maxEvents: number;
  intervalMs: number;
}

export const DEFAULT_BATCHING: BatcherOptions = { maxEvents: 64, intervalMs: 250 };

export class EventBatcher {
  private buffer: PendingEvent[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  private brokenBy: ErrorCode | null = null;

  constructor(
    private readonly commit: CommitBatch,
    private readonly onCommitted: () => void,
    private readonly onBroken: (code: ErrorCode) => void,
    private readonly options: BatcherOptions = DEFAULT_BATCHING,
  ) {}

  get broken(): ErrorCode | null {
    return this.brokenBy;
  }

  push(event: PendingEvent): void {
    if (this.brokenBy) return;
    this.buffer.push(event);
    if (this.buffer.length >= this.options.maxEvents) this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), this.options.intervalMs);
    }
  }

  /** Commits whatever is buffered, now. Safe to call at any time, including with nothing buffered. */
  flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.buffer.length === 0) return;
    const batch = this.buffer;
    this.buffer = [];
    const code = this.commit(batch);
    this.onCommitted();
    if (code && !this.brokenBy) {
      this.brokenBy = code;
      this.onBroken(code);
    }
  }

  /** Drops anything buffered (the task became terminal: its provider events are discarded). */
  discard(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.buffer = [];
  }
}
