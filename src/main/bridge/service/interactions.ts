/**
 * Human requests (docs/task-model.md#human-in-the-loop-requests): a run opens an approval or a question and waits
 * on it; the answer comes back through `task.approval.respond` / `task.question.answer`, checked
 * against the request in the documented order; the provider may withdraw it. Offers
 * `openInteraction`, `withdrawInteraction`, `respondApproval`, `answerQuestion`.
 */
import type { Actor, Params } from "../../../shared/bridge-protocol/methods.ts";
import type { ResultInput } from "../../../shared/bridge-protocol/results.ts";
import { ServerFsError } from "../../../shared/errors.ts";
import {
  type ApprovalOffer,
  type ApprovalResolution,
  checkAnswers,
  checkApproval,
  type QuestionPayload,
  type QuestionResolution,
} from "../../../shared/hitl-validation.ts";
import { isRequestId, newRequestId } from "../../../shared/ids.ts";
import type { Resolution } from "../../../shared/store/index.ts";
import { addSecondsIso, earlierIso, nowIso } from "../../../shared/time.ts";
import type { ServiceContext } from "./context.ts";
import { onExpiry } from "./expiry.ts";
import type { LiveRun } from "./live-runs.ts";
import { cancelTask } from "./steering.ts";

/** The reply each kind of request resolves to. */
interface Replies {
  approval: ApprovalResolution;
  question: QuestionResolution;
}

export async function openInteraction<K extends keyof Replies>(
  ctx: ServiceContext,
  run: LiveRun,
  kind: K,
  payload: Record<string, unknown>,
): Promise<Replies[K]> {
  const task = ctx.store.getTask(run.taskId);
  if (!task?.deadline_at) throw new ServerFsError("INVALID_TASK_TRANSITION", "the task is not running");
  // Which comes first, the interaction timeout or the deadline, is decided on the monotonic clock
  // (timers.ts); the record follows that decision and never names a time after the deadline.
  const timeout = ctx.lifecycle.interaction_timeout_seconds;
  const deadlineDue = ctx.deadlines.dueOf(run.taskId, task.deadline_at);
  const timeoutDue = timeout === 0 ? Number.POSITIVE_INFINITY : ctx.expiries.instantIn(timeout * 1000);
  const beforeDeadline = timeoutDue < deadlineDue;
  const expiresAt = beforeDeadline ? earlierIso(addSecondsIso(nowIso(), timeout), task.deadline_at) : task.deadline_at;
  const requestId = newRequestId();
  ctx.store.openRequest({ requestId, taskId: run.taskId, kind, payload, expiresAt });
  ctx.deps.audit.info("request_opened", { task_id: run.taskId, request_id: requestId, kind });
  ctx.waiters.notify(run.taskId);
  return new Promise<Replies[K]>((resolve, reject) => {
    // respondApproval and answerQuestion check a reply against its request's kind before resolving it
    run.interaction = { requestId, resolve: (r: Resolution) => resolve(r as Replies[K]), reject };
    ctx.expiries.armAt(requestId, beforeDeadline ? timeoutDue : deadlineDue, () => onExpiry(ctx, run.taskId, requestId));
  });
}

/** The provider no longer needs its pending request (it went on without it). */
export function withdrawInteraction(ctx: ServiceContext, run: LiveRun): void {
  const pending = ctx.runs.takeInteraction(run.taskId);
  if (!pending) return;
  ctx.expiries.cancel(pending.requestId);
  ctx.unrecorded.attempt(run.taskId, () => ctx.store.staleRequest(run.taskId, pending.requestId, "withdrawn"));
  ctx.waiters.notify(run.taskId);
}

interface PayloadOf {
  approval: ApprovalOffer;
  question: QuestionPayload;
}

function checkReply<K extends keyof PayloadOf>(ctx: ServiceContext, taskId: string, requestId: string, kind: K) {
  const task = ctx.requireTask(taskId);
  const request = isRequestId(requestId) ? ctx.store.getRequest(requestId) : null;
  if (!request || request.task_id !== taskId) throw new ServerFsError("REQUEST_NOT_FOUND", "no such request for this task");
  if (request.status === "resolved") throw new ServerFsError("REQUEST_ALREADY_RESOLVED", "the request was already answered");
  const stale = () => new ServerFsError("REQUEST_STALE", "the request is no longer pending");
  if (request.status === "stale" || task.pending_request_id !== requestId) throw stale();
  if (request.expires_at !== null && ctx.expiries.reached(requestId, request.expires_at)) {
    onExpiry(ctx, taskId, requestId);
    throw stale();
  }
  if (request.kind !== kind) {
    throw kind === "approval"
      ? new ServerFsError("INVALID_APPROVAL_DECISION", "the request is a question, not an approval")
      : new ServerFsError("INVALID_QUESTION_ANSWER", "the request is an approval, not a question");
  }
  // the payload is the one this Bridge stored when it opened the request (request-payload.ts)
  return { task, request, payload: JSON.parse(request.payload_json) as PayloadOf[K] };
}

function resolve(ctx: ServiceContext, taskId: string, requestId: string, resolution: Resolution, actor: Actor) {
  const change = ctx.store.resolveRequest(taskId, requestId, resolution);
  if (!change) {
    const now = ctx.store.getRequest(requestId);
    if (now?.status === "resolved") throw new ServerFsError("REQUEST_ALREADY_RESOLVED", "the request was already answered");
    throw new ServerFsError("REQUEST_STALE", "the request is no longer pending");
  }
  ctx.expiries.cancel(requestId);
  // the decision is one of a fixed set; answers to questions are content and stay out of the log
  const decision = "decision" in resolution ? resolution.decision : undefined;
  // how long the request waited for its answer (the console's approval wait histogram)
  const waitMs = Math.max(0, Date.now() - Date.parse(change.request.created_at));
  ctx.deps.audit.info("request_answered", { task_id: taskId, request_id: requestId, kind: change.request.kind, decision, actor, wait_ms: waitMs });
  ctx.runs.takeInteraction(taskId, requestId)?.resolve(resolution);
  ctx.waiters.notify(taskId);
  return change.task;
}

export function respondApproval(ctx: ServiceContext, p: Params<"task.approval.respond">): ResultInput<"task.approval.respond"> {
  const { payload } = checkReply(ctx, p.task_id, p.request_id, "approval");
  const resolution = checkApproval(payload, p.decision, p.granted_permission_ids);
  const task = resolve(ctx, p.task_id, p.request_id, resolution, p.actor);
  if (resolution.decision === "cancel_task") cancelTask(ctx, p.task_id, p.actor);
  return { task_id: p.task_id, request_id: p.request_id, resolved: true as const, correlation_id: task.correlation_id };
}

export function answerQuestion(ctx: ServiceContext, p: Params<"task.question.answer">): ResultInput<"task.question.answer"> {
  const { payload } = checkReply(ctx, p.task_id, p.request_id, "question");
  const resolution = checkAnswers(payload, p.answers);
  const task = resolve(ctx, p.task_id, p.request_id, resolution, p.actor);
  return { task_id: p.task_id, request_id: p.request_id, resolved: true as const, correlation_id: task.correlation_id };
}
