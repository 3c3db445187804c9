/**
 * A write submit that meets a lease still held by a task that has already ended (docs/reliability.md
 * "Agent fidelity"): the holder's finally path is about to release it (prove the provider stopped,
 * remove the guard, release the lease), so the submit waits for that, bounded, instead of answering
 * WORKDIR_BUSY. A live holder is never waited for: nothing queues behind a running task.
 *
 * Offers `awaitEndedLeaseHolder(runs, slot, hasEnded, boundMs)` and `ENDED_HOLDER_WAIT_MS`.
 */

/** The most a submit waits for an ended task's finally path. */
export const ENDED_HOLDER_WAIT_MS = 5_000;

/** What this module needs of a live run: its slot, whether it holds a lease, and its finally path. */
export interface LeaseHolder {
  taskId: string;
  slot: number;
  lease: unknown;
  /** Resolves when the finally path has run. */
  done: Promise<void>;
}

/**
 * Resolves once no ended task holds `slot`'s lease, or after `boundMs`; the caller re-checks the slot
 * in its critical section either way. Runs outside that section, so other submits are not held up.
 */
export async function awaitEndedLeaseHolder(
  runs: Iterable<LeaseHolder>,
  slot: number,
  hasEnded: (taskId: string) => boolean,
  boundMs = ENDED_HOLDER_WAIT_MS,
): Promise<void> {
  const holder = [...runs].find((r) => r.slot === slot && r.lease !== null);
  if (!holder || !hasEnded(holder.taskId)) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, boundMs);
  });
  await Promise.race([holder.done.catch(() => undefined), bound]);
  clearTimeout(timer);
}
