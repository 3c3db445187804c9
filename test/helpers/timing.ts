/**
 * Cost as a ratio, never as an absolute bound: a test that has to say "fast" compares two costs taken
 * in the same run. The cost is CPU time, not wall time: a burner on every core stretches a long
 * wall-clock measurement by each preemption while a short one may fit between two, but the CPU time a
 * piece of work takes stays what it is.
 */
import { dlopen, FFIType, ptr } from "bun:ffi";
import { readdirSync, readFileSync } from "node:fs";

const schedNs = (path: string): number => {
  try {
    return Number(readFileSync(path, "utf8").split(" ")[0]);
  } catch {
    // a thread that ended between the listing and the read
    return 0;
  }
};

// the thread's own clock to the nanosecond: getrusage and /proc count a running thread's time only at
// scheduler ticks, which a measurement of a few microseconds falls between
const libc = dlopen("libc.so.6", { clock_gettime: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 } });
const CLOCK_THREAD_CPUTIME_ID = 3;
const timespec = new BigInt64Array(2);

/**
 * CPU time used so far: by this thread (CLOCK_THREAD_CPUTIME_ID), or by every thread of process `pid`
 * (/proc …/schedstat, exact for a thread that is not running when read: the server has answered).
 */
export function cpuNs(pid?: number): number {
  if (pid === undefined) {
    libc.symbols.clock_gettime(CLOCK_THREAD_CPUTIME_ID, ptr(timespec));
    return Number(timespec[0]!) * 1e9 + Number(timespec[1]!);
  }
  let sum = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) sum += schedNs(`/proc/${pid}/task/${tid}/schedstat`);
  return sum;
}

/**
 * How many times more CPU `large` costs than `small` (in this thread, or in process `pid` when the
 * work runs there): the cheapest of `rounds` measurements of each, taken alternately, which drops a
 * round a compilation or a collection ran into.
 */
export async function cpuRatio(large: () => unknown, small: () => unknown, opts: { rounds?: number; pid?: number } = {}): Promise<number> {
  const cost = async (work: () => unknown) => {
    const before = cpuNs(opts.pid);
    await work();
    return cpuNs(opts.pid) - before;
  };
  // once each unmeasured, so the code is compiled for both before either is measured
  await large();
  await small();
  let bestLarge = Number.POSITIVE_INFINITY;
  let bestSmall = Number.POSITIVE_INFINITY;
  for (let i = 0; i < (opts.rounds ?? 3); i++) {
    bestLarge = Math.min(bestLarge, await cost(large));
    bestSmall = Math.min(bestSmall, await cost(small));
  }
  return bestLarge / bestSmall;
}

/**
 * The bound for an input eight times as large: a linear algorithm costs about 8 times as much (7–13
 * measured for the glob matcher and the redactor beside two burners, one round in a dozen up to 30),
 * a quadratic one 64 times in theory and 35–37 measured for an `indexOf` scan from every position. An
 * exponential matcher never gets this far: the test's timeout ends it.
 */
export const LINEAR_FOR_8X = 32;
