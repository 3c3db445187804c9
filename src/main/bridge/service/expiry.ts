/**
 * Time running out (docs/task-model.md#deadlines-and-interaction-expiry): a human request reaching its
 * `expires_at`, and a task reaching its deadline. Offers `onExpiry` and `onDeadline`.
 */
import { ServerFsError } from "../../../shared/errors.ts";
import { isTerminal, type RequestChange } from "../../../shared/store/index.ts";
import type { ServiceContext } from "./context.ts";

/** A request reached `expires_at` (timer, sweep or a late reply's check). */
export function onExpiry(ctx: ServiceContext, taskId: string, requestId: string): void {
  const change = expireRequest(ctx, taskId, requestId);
  if (!change) return;
  if (change.request.expires_at === change.task.deadline_at) {
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
