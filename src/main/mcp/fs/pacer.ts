/**
 * Cooperative pacing for long read-side work (walks, search). The work is synchronous file I/O, so
 * without a pause now and then the event loop would never see stdin EOF (mcp-surface.md §2.1) and a
 * deadline could only be noticed after the fact.
 */
import type { ServerFsError } from "../../../shared/errors.ts";

/** Work runs at most this long between pauses; a pause costs a few microseconds. */
const SLICE_MS = 5;

export interface PaceOptions {
  /** Aborted when the process is going away: the work stops and nobody reads its answer. */
  signal: AbortSignal;
  /** Wall-clock bound (a `performance.now()` instant) and the error that exceeding it raises. */
  deadline?: { at: number; error: () => ServerFsError };
}

export class Pacer {
  private lastPause = performance.now();

  constructor(private readonly opts: PaceOptions) {}

  /** Throws when the deadline has passed; true when the caller should `await pause()`. */
  due(): boolean {
    const now = performance.now();
    this.checkDeadline(now);
    return now - this.lastPause >= SLICE_MS;
  }

  async pause(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.lastPause = performance.now();
    if (this.opts.signal.aborted) throw new Error("the call was abandoned");
    this.checkDeadline(this.lastPause);
  }

  private checkDeadline(now: number): void {
    const deadline = this.opts.deadline;
    if (deadline && now > deadline.at) throw deadline.error();
  }
}
