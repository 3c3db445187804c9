/**
 * The walk pool (docs/reliability.md, "Hardening"): at most `search_workers` worker threads
 * (src/workers/walk-worker.ts), started lazily when a job first needs one, each running one job at
 * a time; further jobs queue in arrival order and wait within their call's deadline.
 *
 * A job ends its call at the deadline or at shutdown without waiting for the worker: the call
 * answers (or, at shutdown, never answers) at once, and the job's stop flag is raised. The worker
 * sees it before its next entry, closes every handle it opened and takes the next job. One that
 * has not come back within `RETIRE_MS` (a system call that hangs, e.g. on a dead network mount)
 * is retired: a fresh worker takes its place, and the old one is terminated once its job returns,
 * so no handle is ever abandoned open. A thread blocked in the kernel cannot be ended sooner (a
 * worker's `terminate()` takes effect only when its thread runs JavaScript again), so at most `size`
 * workers are retired at once: past that, a retired worker keeps its unit until its job returns,
 * and the pool never holds more than twice `size` threads however many calls a hung mount catches.
 */
import type { Remote } from "comlink";
import { type StartedWorker, startWorker } from "../../../shared/comlink-worker.ts";
import { ServerFsError } from "../../../shared/errors.ts";
import { workerUrl } from "../../../shared/self-command.ts";
import { newStopFlag, raise, type StopFlag } from "../../../workers/walk/stop-flag.ts";
import type { WalkApi } from "../../../workers/walk-worker.ts";
import { Abandoned, type WaitOptions, WaitQueue, whenDue } from "../wait-queue.ts";

const RETIRE_MS = 1000;

interface Slot {
  worker: StartedWorker<WalkApi>;
  /** The worker thread ended (it crashed, or was terminated). */
  dead: boolean;
  /** Replaced after its job overran a stop; terminated when that job returns. */
  retired: boolean;
}

export type Job<R> = (api: Remote<WalkApi>, stop: StopFlag) => Promise<R>;

export class WalkPool {
  private readonly units: WaitQueue;
  private readonly idle: Slot[] = [];
  private retired = 0;
  private closed = false;

  constructor(readonly size: number) {
    this.units = new WaitQueue(size);
  }

  /** Runs `job` on a free worker; rejects with the deadline's error, or `Abandoned` at shutdown. */
  async run<R>(opts: WaitOptions, job: Job<R>): Promise<R> {
    const release = await this.units.acquire(opts);
    const slot = this.idle.pop() ?? this.start();
    const stop = newStopFlag();
    const running = job(slot.worker.remote, stop);
    let retire: ReturnType<typeof setTimeout> | undefined;
    const settled = running.then(
      () => undefined,
      () => undefined,
    );
    void settled.then(() => {
      clearTimeout(retire);
      if (slot.retired) this.retired--;
      if (slot.retired || slot.dead || this.closed) slot.worker.terminate();
      else this.idle.push(slot);
      release();
    });
    return new Promise<R>((resolve, reject) => {
      let answered = false;
      const answer = (fn: () => void) => {
        if (answered) return;
        answered = true;
        cancelTimer();
        opts.signal.removeEventListener("abort", onAbort);
        fn();
      };
      const giveUp = (e: Error) =>
        answer(() => {
          raise(stop);
          reject(e);
          retire = setTimeout(() => {
            slot.retired = true;
            if (++this.retired <= this.size) release();
          }, RETIRE_MS);
          retire.unref();
        });
      const onAbort = () => giveUp(new Abandoned("the call was abandoned"));
      const cancelTimer = whenDue(opts.deadline, () => giveUp(opts.deadline!.error()));
      opts.signal.addEventListener("abort", onAbort, { once: true });
      running.then(
        (r) => answer(() => resolve(r)),
        // A worker that died mid-job is an internal failure: the tool's own unexpected code applies.
        (e) => answer(() => reject(slot.dead ? new Error("a walk worker stopped") : e)),
      );
    });
  }

  /** Terminates the idle workers now and each busy one when its job returns; a job after this starts a worker of its own. */
  close(): void {
    this.closed = true;
    for (const slot of this.idle.splice(0)) slot.worker.terminate();
  }

  private start(): Slot {
    const worker = startWorker<WalkApi>(workerUrl("walk-worker"), () => new ServerFsError("READ_FAILED", "a walk worker stopped"));
    worker.unref();
    const slot: Slot = { worker, dead: false, retired: false };
    void worker.exited.then(() => {
      slot.dead = true;
      const i = this.idle.indexOf(slot);
      if (i !== -1) this.idle.splice(i, 1);
    });
    return slot;
  }
}
