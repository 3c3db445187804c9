/**
 * Timing primitives for the benchmark: medians, interleaved repetitions and external commands.
 * Contenders are run round-robin rather than one after the other, so a burst of load from
 * elsewhere on the machine (the cores are shared) lands on all of them alike.
 */

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** Milliseconds rounded to 0.01, the precision the report keeps. */
export const ms = (x: number): number => Math.round(x * 100) / 100;

export type Contenders = Record<string, () => Promise<number>>;

/**
 * Runs every contender `warmups` times unmeasured, then `runs` times measured, round-robin; each
 * contender returns its own elapsed milliseconds. The result is every contender's samples.
 */
export async function interleave(contenders: Contenders, runs: number, warmups = 1): Promise<Record<string, number[]>> {
  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(contenders).map((k) => [k, []]));
  for (let i = 0; i < warmups + runs; i++) {
    for (const [name, run] of Object.entries(contenders)) {
      const elapsed = await run();
      if (i >= warmups) samples[name]!.push(elapsed);
    }
  }
  return samples;
}

/** Times `fn` from call to settlement. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await fn();
  return { ms: performance.now() - started, value };
}

/** Runs a command to completion: elapsed milliseconds from spawn to exit and the count of output lines. */
export async function runCommand(argv: string[]): Promise<{ ms: number; lines: number }> {
  const started = performance.now();
  const proc = Bun.spawn(argv, { stdout: "pipe", stderr: "ignore" });
  let lines = 0;
  for await (const chunk of proc.stdout) {
    for (const byte of chunk) if (byte === 0x0a) lines++;
  }
  const code = await proc.exited;
  const elapsed = performance.now() - started;
  // grep and rg exit 1 for "no match", which is still a complete run.
  if (code !== 0 && !(code === 1 && lines === 0)) throw new Error(`${argv[0]} exited with ${code}`);
  return { ms: elapsed, lines };
}

/** The first line a command prints (a version banner), or null when it cannot be run. */
export function firstLine(argv: string[]): string | null {
  try {
    const r = Bun.spawnSync(argv, { stdout: "pipe", stderr: "ignore" });
    if (r.exitCode !== 0) return null;
    return r.stdout.toString("utf8").split("\n")[0]?.trim() ?? null;
  } catch {
    return null;
  }
}
