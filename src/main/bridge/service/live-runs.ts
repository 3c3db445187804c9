/**
 * The runs this Bridge is carrying (docs/task-model.md#threads): one `LiveRun` per task from its
 * submission to the end of its finally path, with the human request it may be waiting on. Offers
 * `LiveRun`, `PendingInteraction` and `LiveRuns`, the table of them keyed by task id.
 */

import type { ServerFsError } from "../../../shared/errors.ts";
import type { Lease } from "../../../shared/leases/lock-files.ts";
import type { Resolution } from "../../../shared/store/index.ts";
import type { LitterBaseline } from "./sandbox-litter.ts";

export interface PendingInteraction {
  requestId: string;
  resolve: (resolution: Resolution) => void;
  reject: (e: ServerFsError) => void;
}

export interface LiveRun {
  taskId: string;
  slot: number;
  lease: Lease | null;
  interaction: PendingInteraction | null;
  /** Resolves when the finally path has run. */
  done: Promise<void>;
  /** A shutdown's group termination under way (docs/task-model.md#shutdown); the finally path waits for it. */
  stopping: Promise<unknown> | null;
  /** A cancel, deadline or expiry asked the provider to stop (then SIGKILL, no second grace: docs/task-model.md#the-finally-path). */
  stopRequested: boolean;
  /** Which sandbox litter names the start directory lacked before the provider started. */
  litter: LitterBaseline | null;
  /** The operational log's `task_started` line was written. */
  startLogged?: boolean;
}

export class LiveRuns {
  private readonly runs = new Map<string, LiveRun>();

  get(taskId: string): LiveRun | undefined {
    return this.runs.get(taskId);
  }
  get size(): number {
    return this.runs.size;
  }
  has(taskId: string): boolean {
    return this.runs.has(taskId);
  }
  add(run: LiveRun): void {
    this.runs.set(run.taskId, run);
  }
  delete(taskId: string): void {
    this.runs.delete(taskId);
  }
  values(): LiveRun[] {
    return [...this.runs.values()];
  }
  taskIds(): string[] {
    return [...this.runs.keys()];
  }

  /**
   * Hands over the human request `taskId`'s run is waiting on (only if it is `requestId`, when given)
   * and forgets it, so the one who takes it settles that wait exactly once.
   */
  takeInteraction(taskId: string, requestId?: string): PendingInteraction | null {
    const run = this.runs.get(taskId);
    const pending = run?.interaction ?? null;
    if (!run || !pending || (requestId !== undefined && pending.requestId !== requestId)) return null;
    run.interaction = null;
    return pending;
  }
}
