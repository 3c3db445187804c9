/** Waiting for a fact instead of for time: `check` is asked again until it holds or the bound passes. */
export async function poll(check: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = "the condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`${what} did not hold within ${timeoutMs} ms`);
    // pacing between checks, not synchronization: the loop ends on the fact
    await Bun.sleep(25);
  }
}
