/**
 * Time as a ratio, never as an absolute bound: a test that has to say "fast" compares two timings
 * taken in the same run, so a loaded machine slows both alike.
 */

/**
 * How many times longer `large` takes than `small`: the fastest of `rounds` timings of each, taken
 * alternately and each after a full collection, which drops the rounds the scheduler took the core
 * away and the garbage one left for the other.
 */
export async function timeRatio(large: () => unknown, small: () => unknown, rounds = 3): Promise<number> {
  const time = async (work: () => unknown) => {
    Bun.gc(true);
    const started = performance.now();
    await work();
    return performance.now() - started;
  };
  let bestLarge = Number.POSITIVE_INFINITY;
  let bestSmall = Number.POSITIVE_INFINITY;
  for (let i = 0; i < rounds; i++) {
    bestLarge = Math.min(bestLarge, await time(large));
    bestSmall = Math.min(bestSmall, await time(small));
  }
  return bestLarge / bestSmall;
}

/**
 * The bound for an input eight times as large: a linear algorithm takes about 8 times as long, a
 * quadratic one 64 times; measured here up to 15 times under load for linear ones.
 */
export const LINEAR_FOR_8X = 32;
