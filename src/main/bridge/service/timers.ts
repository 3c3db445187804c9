/**
 * Deadlines and request expiries while the Bridge runs (docs/task-model.md#time-and-clocks). The record
 * is the wall-clock timestamp (`deadline_at`, `expires_at`), but the time left is counted on the
 * monotonic clock: when the Bridge sets a time, or first meets one it did not set, it anchors it —
 * what is left is the record minus the wall clock at that moment, and from then on only the monotonic
 * clock counts it down. So a step of the system clock (an operator's `date -s`, an NTP step) neither
 * ends a task early nor postpones its end.
 *
 * Offers `Clocks` and `SYSTEM_CLOCKS`, and `TimerTable`: per key (a task id or a request id) the
 * anchored instant and a timer that fires at it. A timer is re-armed in steps, since the time left may
 * be more than a JavaScript timer can hold (2^31 − 1 ms), and is unref'd, so a pending deadline never
 * keeps the process alive on its own. Bun's timers themselves run on the monotonic clock.
 */
import { msOfIso } from "../../../shared/time.ts";

const MAX_STEP_MS = 2 ** 31 - 1;

/** The two clocks a due time is read from; tests of this module pass their own. */
export interface Clocks {
  /** Milliseconds since the epoch: what the records are written in, and what may jump. */
  wallMs(): number;
  /** Milliseconds on a clock that only moves forward, at the same rate as time passes. */
  monotonicMs(): number;
}

export const SYSTEM_CLOCKS: Clocks = { wallMs: () => Date.now(), monotonicMs: () => performance.now() };

export class TimerTable {
  /** Key → the monotonic instant it is due. */
  private readonly due = new Map<string, number>();
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(private readonly clocks: Clocks = SYSTEM_CLOCKS) {}

  /** The monotonic instant `key` is due; met for the first time, `iso` is anchored now. */
  dueOf(key: string, iso: string): number {
    let at = this.due.get(key);
    if (at === undefined) {
      at = this.clocks.monotonicMs() + (msOfIso(iso) - this.clocks.wallMs());
      this.due.set(key, at);
    }
    return at;
  }

  /** The monotonic instant `ms` from now: a time the Bridge sets, anchored as it writes its record. */
  instantIn(ms: number): number {
    return this.clocks.monotonicMs() + ms;
  }

  /** Whether `key` (recorded as `iso`) is due: now on the monotonic clock is at or past its instant. */
  reached(key: string, iso: string): boolean {
    return this.clocks.monotonicMs() >= this.dueOf(key, iso);
  }

  /** Anchors `iso` for `key` (unless it already is) and fires once it is due. */
  arm(key: string, iso: string, fire: () => void): void {
    this.armAt(key, this.dueOf(key, iso), fire);
  }

  /** Fires once the monotonic clock reaches `at`, which becomes `key`'s instant; arming a key again replaces its timer. */
  armAt(key: string, at: number, fire: () => void): void {
    this.cancel(key);
    this.due.set(key, at);
    const step = () => {
      const left = at - this.clocks.monotonicMs();
      if (left <= 0) {
        this.timers.delete(key);
        fire();
        return;
      }
      const timer = setTimeout(step, Math.min(left, MAX_STEP_MS));
      timer.unref?.();
      this.timers.set(key, timer);
    };
    step();
  }

  /** Stops `key`'s timer; its instant stays known, for the sweep and a late reply's check. */
  cancel(key: string): void {
    const timer = this.timers.get(key);
    if (timer) clearTimeout(timer);
    this.timers.delete(key);
  }

  cancelAll(): void {
    for (const key of [...this.timers.keys()]) this.cancel(key);
  }

  /** Forgets the instants (and stops the timers) of the keys `done` says are over. */
  forgetWhere(done: (key: string) => boolean): void {
    for (const key of [...this.due.keys()]) {
      if (!done(key)) continue;
      this.cancel(key);
      this.due.delete(key);
    }
  }
}
