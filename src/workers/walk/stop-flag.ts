/**
 * A job's stop flag, one `Int32Array` over shared memory: the main thread raises it (the call's
 * deadline passed, or the process is going away) and the worker running the job polls it between
 * entries and files, so work that runs off the main thread still ends within one entry's time and
 * closes every handle it opened on the way out (docs/reliability.md, "Hardening").
 */

export type StopFlag = Int32Array;

export const newStopFlag = (): StopFlag => new Int32Array(new SharedArrayBuffer(4));

export function raise(flag: StopFlag): void {
  Atomics.store(flag, 0, 1);
}

/** Thrown inside a job whose flag was raised; whoever raised it answers the call, not the job. */
export class Stopped extends Error {
  override readonly name = "Stopped";
}

export function throwIfStopped(flag: StopFlag): void {
  if (Atomics.load(flag, 0) !== 0) throw new Stopped("the job was stopped");
}
