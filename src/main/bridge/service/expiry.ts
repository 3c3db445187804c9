/**
 * Time running out (docs/task-model.md#deadlines-and-interaction-expiry): a human request reaching its
 * `expires_at`, and a task reaching its deadline. Offers `onExpiry` and `onDeadline`.
 */
import { ServerFsError } from "../../../shared/errors.ts";
import { isTerminal } from "../../../shared/store/index.ts";
import type { ServiceContext } from "./context.ts";

/** §8.2: a request reached `expires_at` (timer, sweep or a late reply's check). */
export function onExpiry(ctx: ServiceContext, taskId: string, requestId: string): void {
  // a store that cannot take it leaves the request pending: the maintenance sweep finds it again
  const change = ctx.unrecorded.attempt(taskId, () => ctx.store.staleRequest(taskId, requestId, "expired"));
  if (!change) return;
  ctx.expiries.cancel(requestId);
  const run = ctx.runs.get(taskId);
  if (run?.interaction?.requestId === requestId) {
    run.interaction.reject(new ServerFsError("AGENT_INTERACTION_EXPIRED", "the request expired"));
    run.interaction = null;
  }
  const task = change.task;
  if (change.request.expires_at === task.deadline_at) {
    void onDeadline(ctx, taskId);
  } else {
    ctx.unrecorded.attempt(taskId, () =>
      ctx.store.transition(taskId, "interrupted", {
        error: { code: "AGENT_INTERACTION_TIMED_OUT", message: "a human request expired before the task deadline" },
        events: [{ type: "task.interrupted", payload: { error_code: "AGENT_INTERACTION_TIMED_OUT" } }],
      }),
    );
    ctx.stopProvider(taskId);
  }
  ctx.waiters.notify(taskId);
}

/** §8.1: interrupt the provider, stale the request, interrupt the task, then stop it for good. */
export async function onDeadline(ctx: ServiceContext, taskId: string): Promise<void> {
  const task = ctx.store.getTask(taskId);
  if (!task || isTerminal(task.status)) return;
  ctx.stopProvider(taskId);
  if (task.pending_request_id) onExpiryForDeadline(ctx, taskId, task.pending_request_id);
  ctx.unrecorded.attempt(taskId, () =>
    ctx.store.transition(taskId, "interrupted", {
      error: { code: "AGENT_TASK_TIMED_OUT", message: "the task deadline passed" },
      events: [{ type: "task.interrupted", payload: { error_code: "AGENT_TASK_TIMED_OUT" } }],
    }),
  );
  ctx.waiters.notify(taskId);
}

function onExpiryForDeadline(ctx: ServiceContext, taskId: string, requestId: string): void {
  if (!ctx.unrecorded.attempt(taskId, () => ctx.store.staleRequest(taskId, requestId, "expired"))) return;
  ctx.expiries.cancel(requestId);
  const run = ctx.runs.get(taskId);
  if (run?.interaction?.requestId === requestId) {
    run.interaction.reject(new ServerFsError("AGENT_INTERACTION_EXPIRED", "the request expired"));
    run.interaction = null;
  }
}

