/**
 * Long-poll waiters for `task.events` (docs/bridge-rpc.md#long-polls). A waiter resolves when its task gets
 * a committed event, becomes terminal, the wait elapses, or shutdown begins; it re-checks at least
 * once a second so a missed notice can never strand it. Timers are unref'd: a wait never holds the
 * process open.
 */
export class EventWaiters {
  private readonly waiting = new Map<string, Set<() => void>>();
  private closed = false;

  /** Wake everyone waiting on this task (after an event batch commits or the task settles). */
  notify(taskId: string): void {
    const set = this.waiting.get(taskId);
    if (!set) return;
    this.waiting.delete(taskId);
    for (const wake of set) wake();
  }

  /** Wake every waiter at once (shutdown). */
  close(): void {
    this.closed = true;
    for (const id of [...this.waiting.keys()]) this.notify(id);
  }

  /**
   * Waits until `ready()` is true, a notice for the task arrives, `ms` elapse, or `signal` aborts.
   * `ready` is re-evaluated on every notice and at least once a second.
   */
  async wait(taskId: string, ms: number, ready: () => boolean, signal?: AbortSignal): Promise<void> {
    // the monotonic clock: a step of the system clock neither ends a long poll early nor stretches it
    const deadline = performance.now() + ms;
    while (!this.closed && !signal?.aborted && !ready()) {
      const left = deadline - performance.now();
      if (left <= 0) return;
      await new Promise<void>((resolve) => {
        let set = this.waiting.get(taskId);
        if (!set) {
          set = new Set();
          this.waiting.set(taskId, set);
        }
        const done = () => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", done);
          set.delete(done);
          resolve();
        };
        const timer = setTimeout(done, Math.min(left, 1000));
        timer.unref?.();
        signal?.addEventListener("abort", done, { once: true });
        set.add(done);
      });
    }
  }
}
