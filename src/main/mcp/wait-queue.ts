/**
 * A counting semaphore whose waiters queue in arrival order and give up at their call's deadline
 * or when the process is going away. Heavy calls and walk-pool workers are both bounded with it:
 * waiting counts against the call's own deadline (docs/reliability.md, "Hardening").
 */
import type { ServerFsError } from "../../shared/errors.ts";

/** A `performance.now()` instant and the error that passing it raises. */
export interface Deadline {
  at: number;
  error: () => ServerFsError;
}

export interface WaitOptions {
  /** Aborted when the process is going away: the call is abandoned and nobody reads its answer. */
  signal: AbortSignal;
  deadline?: Deadline;
}

/** What a call abandoned at shutdown rejects with; its answer is never written. */
export class Abandoned extends Error {
  override readonly name = "Abandoned";
}

/** Runs `onExpire` once the deadline passes (never, without one); returns the canceller. */
export function whenDue(deadline: Deadline | undefined, onExpire: () => void): () => void {
  if (!deadline) return () => undefined;
  const timer = setTimeout(onExpire, Math.max(0, deadline.at - performance.now()));
  timer.unref();
  return () => clearTimeout(timer);
}

export class WaitQueue {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly size: number) {
    this.free = size;
  }

  /** Resolves with the release function once a unit is free; rejects at the deadline or on abort. */
  acquire(opts: WaitOptions): Promise<() => void> {
    if (opts.signal.aborted) return Promise.reject(new Abandoned("the call was abandoned"));
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    };
    if (this.free > 0) {
      this.free--;
      return Promise.resolve(release);
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        cleanup();
        resolve(release);
      };
      const giveUp = (e: Error) => {
        cleanup();
        const i = this.waiting.indexOf(grant);
        if (i !== -1) this.waiting.splice(i, 1);
        reject(e);
      };
      const onAbort = () => giveUp(new Abandoned("the call was abandoned"));
      const cancelTimer = whenDue(opts.deadline, () => giveUp(opts.deadline!.error()));
      const cleanup = () => {
        cancelTimer();
        opts.signal.removeEventListener("abort", onAbort);
      };
      opts.signal.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(grant);
    });
  }
}
