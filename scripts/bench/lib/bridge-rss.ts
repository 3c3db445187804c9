/**
 * Resident memory of a process as the kernel reports it (`/proc/<pid>/status`, VmRSS and VmHWM).
 * The Bridge's worker threads live in its process and count; its providers are separate processes
 * and do not.
 */
import { readFileSync } from "node:fs";
import { median } from "./measure.ts";

/** MB = 10^6 bytes; the kernel's "kB" is KiB. */
const toMb = (kib: number): number => Math.round((kib * 1024) / 1e4) / 100;

function statusField(pid: number, field: "VmRSS" | "VmHWM"): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${field}:`));
  const kib = line ? Number.parseInt(line.slice(field.length + 1), 10) : Number.NaN;
  if (!Number.isFinite(kib)) throw new Error(`no ${field} for process ${pid}`);
  return kib;
}

export const rssMb = (pid: number): number => toMb(statusField(pid, "VmRSS"));
export const peakRssMb = (pid: number): number => toMb(statusField(pid, "VmHWM"));

/** The largest RSS seen while `during` runs, sampled every `everyMs`. */
export async function maxRssDuring<T>(pid: number, everyMs: number, during: () => Promise<T>): Promise<{ value: T; max_mb: number }> {
  let max = rssMb(pid);
  const timer = setInterval(() => {
    max = Math.max(max, rssMb(pid));
  }, everyMs);
  try {
    const value = await during();
    return { value, max_mb: Math.max(max, rssMb(pid)) };
  } finally {
    clearInterval(timer);
  }
}

/**
 * RSS once the process has had `settleMs` to return memory: the median of five samples 100 ms apart.
 * After tasks, give it more than the Bridge's idle delay before it gives memory back (1 s,
 * `IDLE_RELEASE_MS` in src/main/bridge/service/context.ts).
 */
export async function settledRss(pid: number, settleMs = 1_000): Promise<number> {
  await Bun.sleep(settleMs);
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    samples.push(rssMb(pid));
    await Bun.sleep(100);
  }
  return median(samples);
}
