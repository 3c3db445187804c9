/**
 * The task service's part of shutdown (docs/task-model.md#shutdown), bounded as a whole. Offers
 * `shutdownRuns`, `interruptForShutdown` and `SHUTDOWN_BOUND_MS`.
 */
import { terminateProcessGroup } from "../../../shared/process-group.ts";
import type { TaskStatus } from "../../../shared/store/index.ts";
import type { ServiceContext } from "./context.ts";

/** The whole shutdown sequence is bounded (about 15 s). */
export const SHUTDOWN_BOUND_MS = 15_000;

/**
 * Steps 2–4 of the shutdown, bounded by `boundMs`. Queued tasks never had a provider and are interrupted at
 * once, which also keeps the worker from starting them. Every live provider group is terminated
 * and verified in parallel, with no interrupt grace first; each run's finally path then
 * interrupts its task with BRIDGE_SHUTDOWN, removes its guard only if the stop was verified and
 * releases its lease. Whatever the bound cuts short is interrupted all the same and keeps its
 * guard for the next start to reconcile.
 */
export async function shutdownRuns(ctx: ServiceContext, boundMs = SHUTDOWN_BOUND_MS): Promise<void> {
  ctx.closing = true;
  ctx.waiters.close();
  ctx.deadlines.cancelAll();
  ctx.expiries.cancelAll();
  for (const task of ctx.store.listActive()) {
    if (task.status === "queued") interruptForShutdown(ctx, task.task_id, ["queued"]);
  }
  const runs = ctx.runs.values();
  for (const run of runs) {
    ctx.stopProvider(run.taskId);
    run.stopping = terminateRecorded(ctx, run.taskId);
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, boundMs);
  });
  await Promise.race([Promise.all(runs.map((r) => r.done.catch(() => undefined))), bound]);
  clearTimeout(timer);
  for (const task of ctx.store.listActive()) interruptForShutdown(ctx, task.task_id);
  for (const run of ctx.runs.values()) run.lease?.release();
}

/** Terminates the group a task's row records, if a provider may have been spawned. */
async function terminateRecorded(ctx: ServiceContext, taskId: string): Promise<void> {
  const row = ctx.store.getTask(taskId);
  if (!row || row.started_at === null) return;
  await terminateProcessGroup(row.provider_pgid, row.provider_start_time, row.provider_mark);
}

export function interruptForShutdown(ctx: ServiceContext, taskId: string, from?: readonly TaskStatus[]): void {
  // a store that cannot take it leaves the task active for the next start to reconcile
  const error = { code: "BRIDGE_SHUTDOWN", message: "the Bridge stopped" } as const;
  const moved = ctx.unrecorded.attempt(taskId, () => ctx.store.endTask(taskId, { to: "interrupted", error }, from ? { from } : {}));
  if (moved) ctx.waiters.notify(taskId);
}
