/**
 * At most one run of `fn` in flight: a call while one runs shares its promise instead of queueing
 * another. The retention GC pass is asked for by every submit, cancel and run end; a burst of them
 * costs the maintenance worker one pass at a time, and nobody waits behind a queue of passes.
 */
export function singleFlight(fn: () => Promise<void>): () => Promise<void> {
  let inFlight: Promise<void> | null = null;
  return () => {
    inFlight ??= fn().finally(() => {
      inFlight = null;
    });
    return inFlight;
  };
}
