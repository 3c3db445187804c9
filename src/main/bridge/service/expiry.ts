/**
 * Time running out (docs/task-model.md#deadlines-and-interaction-expiry): a human request reaching its
 * `expires_at`, and a task reaching its deadline. Offers `onExpiry`, `onDeadline` and `checkTimes`.
 */
import { ServerFsError } from "../../../shared/errors.ts";
import { isTerminal, type RequestChange } from "../../../shared/store/index.ts";
import type { TimesSnapshot } from "../../../workers/maintenance-worker.ts";
import type { ServiceContext } from "./context.ts";

/**
 * The maintenance sweep's backstop behind the timers: each recorded deadline and expiry is asked of its
 * monotonic instant (timers.ts; one this Bridge did not set is anchored now), and what is due is acted
 * on. Then the instants of tasks and requests that are over are forgotten.
 */
export function checkTimes(ctx: ServiceContext, times: TimesSnapshot): void {
  for (const t of times.deadlines) if (ctx.deadlines.reached(t.taskId, t.deadlineAt)) void onDeadline(ctx, t.taskId);
  for (const r of times.expiries) if (ctx.expiries.reached(r.requestId, r.expiresAt)) onExpiry(ctx, r.taskId, r.requestId);
  ctx.deadlines.forgetWhere((taskId) => isTerminal(ctx.store.getTask(taskId)?.status ?? "failed"));
  ctx.expiries.forgetWhere((requestId) => ctx.store.getRequest(requestId)?.status !== "pending");
}

/**
 * A request reached `expires_at` (timer, sweep or a late reply's check). Whether that is the task's
 * deadline is asked of the deadline's own monotonic instant (timers.ts), which an expiry at the
 * deadline shares.
 */
export function onExpiry(ctx: ServiceContext, taskId: string, requestId: string): void {
  const change = expireRequest(ctx, taskId, requestId);
  if (!change) return;
  const deadline = change.task.deadline_at;
  if (deadline !== null && ctx.deadlines.reached(taskId, deadline)) {
    void onDeadline(ctx, taskId);
  } else {
    const error = { code: "AGENT_INTERACTION_TIMED_OUT", message: "a human request expired before the task deadline" } as const;
    ctx.unrecorded.attempt(taskId, () => ctx.store.endTask(taskId, { to: "interrupted", error }));
    ctx.stopProvider(taskId);
  }
  ctx.waiters.notify(taskId);
}

/** The task's deadline passed: interrupt the provider, stale the request, interrupt the task, then stop it for good. */
export async function onDeadline(ctx: ServiceContext, taskId: string): Promise<void> {
  const task = ctx.store.getTask(taskId);
  if (!task || isTerminal(task.status)) return;
  ctx.stopProvider(taskId);
  if (task.pending_request_id) expireRequest(ctx, taskId, task.pending_request_id);
  const error = { code: "AGENT_TASK_TIMED_OUT", message: "the task deadline passed" } as const;
  ctx.unrecorded.attempt(taskId, () => ctx.store.endTask(taskId, { to: "interrupted", error }));
  ctx.waiters.notify(taskId);
}

/**
 * Stales an expired request, cancels its timer and ends the run's wait on it. Null when the request
 * was no longer pending, or when the store could not take the write: then it stays pending and the
 * maintenance sweep finds it again.
 */
function expireRequest(ctx: ServiceContext, taskId: string, requestId: string): RequestChange | null {
  const change = ctx.unrecorded.attempt(taskId, () => ctx.store.staleRequest(taskId, requestId, "expired"));
  if (!change) return null;
  ctx.expiries.cancel(requestId);
  ctx.runs.takeInteraction(taskId, requestId)?.reject(new ServerFsError("AGENT_INTERACTION_EXPIRED", "the request expired"));
  return change;
}
