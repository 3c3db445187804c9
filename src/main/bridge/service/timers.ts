/**
 * Timers for deadlines and expiries that may lie further ahead than a JavaScript timer can hold
 * (2^31 − 1 ms): a deadline is a timestamp, re-armed in steps (docs/bridge-rpc.md#limits). Unref'd, so a
 * pending deadline never keeps the process alive on its own.
 */
const MAX_STEP_MS = 2 ** 31 - 1;

export interface Cancelable {
  cancel(): void;
}

export function atTime(iso: string, fire: () => void): Cancelable {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let cancelled = false;
  const arm = () => {
    if (cancelled) return;
    const left = Date.parse(iso) - Date.now();
    if (left <= 0) {
      fire();
      return;
    }
    timer = setTimeout(arm, Math.min(left, MAX_STEP_MS));
    timer.unref?.();
  };
  arm();
  return {
    cancel() {
      cancelled = true;
      if (timer) clearTimeout(timer);
    },
  };
}

/** A keyed set of timers: arming a key again replaces its timer. */
export class TimerTable {
  private readonly timers = new Map<string, Cancelable>();

  arm(key: string, iso: string, fire: () => void): void {
    this.cancel(key);
    this.timers.set(
      key,
      atTime(iso, () => {
        this.timers.delete(key);
        fire();
      }),
    );
  }

  cancel(key: string): void {
    this.timers.get(key)?.cancel();
    this.timers.delete(key);
  }

  cancelAll(): void {
    for (const t of this.timers.values()) t.cancel();
    this.timers.clear();
  }
}
