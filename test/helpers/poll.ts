/**
 * Waiting for a fact instead of for time, the one way tests (and the stress scripts) wait: `check` is
 * asked again until it holds or the bound passes.
 */

/** Whether `check` comes to hold within `timeoutMs`: for a caller that records a miss rather than failing. */
export async function holdsWithin(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    // pacing between checks, not synchronization: the loop ends on the fact
    await Bun.sleep(25);
  }
}

/**
 * Resolves once `check` holds; throws, naming `what`, when it has not within `timeoutMs` (a function
 * is asked at that moment, so it can tell the state the wait ended in).
 */
export async function poll(check: () => boolean | Promise<boolean>, timeoutMs = 10_000, what: string | (() => string) = "the condition"): Promise<void> {
  if (!(await holdsWithin(check, timeoutMs))) throw new Error(`${typeof what === "string" ? what : what()} did not hold within ${timeoutMs} ms`);
}
