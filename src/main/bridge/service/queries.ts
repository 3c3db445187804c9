/**
 * The read-only methods (docs/bridge-rpc.md#methods): `runtime.list`, `task.get`, `task.list`,
 * `task.events` (with its long poll) and `task.result.read`. Offers one function per method.
 */
import type { Params } from "../../../shared/bridge-protocol/methods.ts";
import type { ResultInput } from "../../../shared/bridge-protocol/results.ts";
import { ServerFsError } from "../../../shared/errors.ts";
import { isTaskId } from "../../../shared/ids.ts";
import { LIMITS } from "../../../shared/limits.ts";
import { isTerminal, TASK_STATUSES, type TaskObject, type TaskStatus } from "../../../shared/store/index.ts";
import { notFound, type ServiceContext } from "./context.ts";

const ANSWER_RESPONSE_LIMIT = 1_000_000;

export async function runtimeList(ctx: ServiceContext): Promise<ResultInput<"runtime.list">> {
  return { runtimes: await ctx.deps.probes.list() };
}

export function readTask(ctx: ServiceContext, taskId: string): TaskObject {
  const task = isTaskId(taskId) ? ctx.store.getTaskObject(taskId) : null;
  if (!task) throw notFound();
  return task;
}

export function readTaskList(ctx: ServiceContext, p: Params<"task.list">): ResultInput<"task.list"> {
  const status = p.status ?? undefined;
  if (status !== undefined && !(TASK_STATUSES as readonly string[]).includes(status)) {
    throw new ServerFsError("INVALID_REQUEST", "status is not a task status");
  }
  const page = ctx.store.listTaskObjects({
    status: status as TaskStatus | undefined,
    limit: p.limit,
    beforeTaskId: p.before_task_id ?? undefined,
  });
  return { tasks: page.tasks, next_before_task_id: page.nextBeforeTaskId };
}

export async function readEvents(ctx: ServiceContext, p: Params<"task.events">, signal?: AbortSignal): Promise<ResultInput<"task.events">> {
  const task = ctx.requireTask(p.task_id);
  const { after_event_id: after, limit, wait_ms: waitMs } = p;
  if (after < 0 || limit < 1 || limit > LIMITS.max_event_page || waitMs < 0 || waitMs > LIMITS.max_wait_ms) {
    throw new ServerFsError("INVALID_LIMIT", `after_event_id must be ≥ 0, limit 1..${LIMITS.max_event_page} and wait_ms 0..${LIMITS.max_wait_ms}`);
  }
  let page = ctx.store.listEvents(p.task_id, after, limit);
  if (page.length === 0 && waitMs > 0 && !isTerminal(task.status) && !ctx.closing) {
    await ctx.waiters.wait(
      p.task_id,
      waitMs,
      () => ctx.store.maxEventId(p.task_id) > after || isTerminal(ctx.store.getTask(p.task_id)?.status ?? "failed"),
      signal,
    );
    page = ctx.store.listEvents(p.task_id, after, limit);
  }
  // Keep the encoded response inside 1 MiB; a page always holds at least one event.
  let bytes = 0;
  let keep = 0;
  for (const e of page) {
    bytes += Buffer.byteLength(JSON.stringify(e)) + 1;
    if (keep > 0 && bytes > ANSWER_RESPONSE_LIMIT) break;
    keep++;
  }
  const events = page.slice(0, keep);
  return {
    correlation_id: task.correlation_id,
    events,
    next_after_event_id: events.length > 0 ? events[events.length - 1]!.event_id : after,
    // where a reader that wants only what comes next starts (the MCP side's form watch)
    last_event_id: ctx.store.maxEventId(p.task_id),
  };
}

export async function readResult(ctx: ServiceContext, p: Params<"task.result.read">): Promise<ResultInput<"task.result.read">> {
  const task = ctx.requireTask(p.task_id);
  if (task.result_storage !== "spool" || task.result_size_bytes === null) {
    throw new ServerFsError("AGENT_RESULT_NOT_RETRIEVABLE", "the task has no spooled result; read final_response from get_agent_task");
  }
  const { max_bytes: maxBytes, offset_bytes: offset } = p;
  if (maxBytes < 1 || maxBytes > LIMITS.max_result_chunk_bytes) {
    throw new ServerFsError("INVALID_RESULT_LIMIT", `max_bytes must be 1..${LIMITS.max_result_chunk_bytes}`);
  }
  if (offset < 0) throw new ServerFsError("INVALID_RESULT_OFFSET", "offset_bytes must be ≥ 0");
  const chunk = await ctx.deps.spool.readSpoolChunk(ctx.deps.config.bridge.stateDir, task.task_id, task.result_size_bytes, offset, maxBytes);
  return { ...chunk, correlation_id: task.correlation_id };
}
