/**
 * Steering and cancellation (docs/task-model.md#steering, #cancellation): `task.message.send` to a
 * live run and `task.cancel`. Offers `sendMessage` and `cancelTask`.
 */
import type { Actor, Params } from "../../../shared/bridge-protocol/methods.ts";
import type { ResultInput } from "../../../shared/bridge-protocol/results.ts";
import { byteSize } from "../../../shared/byte-size.ts";
import { ServerFsError } from "../../../shared/errors.ts";
import { LIMITS } from "../../../shared/limits.ts";
import { isTerminal } from "../../../shared/store/index.ts";
import type { ServiceContext } from "./context.ts";

export async function sendMessage(ctx: ServiceContext, p: Params<"task.message.send">): Promise<ResultInput<"task.message.send">> {
  if (p.message === "") throw new ServerFsError("INVALID_REQUEST", "message must not be empty");
  if (Buffer.byteLength(p.message) > LIMITS.max_message_bytes) {
    throw new ServerFsError("AGENT_MESSAGE_TOO_LARGE", `the message is larger than ${byteSize(LIMITS.max_message_bytes)}`);
  }
  const task = ctx.requireTask(p.task_id);
  if (isTerminal(task.status)) throw new ServerFsError("AGENT_TASK_TERMINAL", "the task has ended; submit a continuation instead");
  if (task.status === "queued" || !ctx.runs.has(p.task_id)) throw new ServerFsError("AGENT_TASK_NOT_ACTIVE", "the task cannot take a message yet");
  const probe = await ctx.deps.probes.probe(task.runtime);
  if ("live_steer" in probe && !probe.live_steer) {
    throw new ServerFsError("AGENT_PROVIDER_ERROR", "live steering is not supported by this runtime");
  }
  await ctx.deps.provider.sendMessage(p.task_id, p.message);
  // The provider took the message: its record is kept even when the run ended in the meantime (a steer
  // can finish the turn at once), since the answer says it was accepted (docs/events.md#appending).
  ctx.store.appendEvents(p.task_id, [{ type: "user.message", payload: { bytes: Buffer.byteLength(p.message) } }], { allowTerminal: true });
  ctx.waiters.notify(p.task_id);
  return { task_id: p.task_id, accepted: true as const, correlation_id: task.correlation_id };
}

/**
 * Idempotent and terminal-first; the cancel is committed before the answer. A cancel that moved the
 * task is audited with who asked (`actor`); one that found it ended changed nothing to audit.
 */
export function cancelTask(ctx: ServiceContext, taskId: string, actor: Actor): ResultInput<"task.cancel"> {
  const task = ctx.requireTask(taskId);
  if (isTerminal(task.status)) return { task_id: taskId, status: task.status, correlation_id: task.correlation_id };
  const moved = ctx.store.endTask(taskId, { to: "cancelled" });
  const status = moved ? "cancelled" : (ctx.store.getTask(taskId)?.status ?? "cancelled");
  if (moved) ctx.deps.audit.info("task_cancel_requested", { task_id: taskId, actor });
  ctx.runs.takeInteraction(taskId)?.reject(new ServerFsError("AGENT_INTERACTION_EXPIRED", "the task was cancelled"));
  ctx.stopProvider(taskId);
  ctx.waiters.notify(taskId);
  ctx.requestGc();
  return { task_id: taskId, status, correlation_id: task.correlation_id };
}
