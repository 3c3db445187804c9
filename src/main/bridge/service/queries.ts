/**
 * The read-only methods (docs/bridge-rpc.md#methods): `runtime.list`, `task.get`, `task.list`,
 * `task.events` (with its long poll) and `task.result.read`. Offers one function per method.
 */
import { ServerFsError } from "../../../shared/errors.ts";
import { isTaskId } from "../../../shared/ids.ts";
import { RESULT_PREVIEW_BYTES } from "../../../shared/spool.ts";
import { isTerminal, TASK_STATUSES, type TaskObject, type TaskStatus } from "../../../shared/store/index.ts";
import { notFound, type ServiceContext } from "./context.ts";

const ANSWER_RESPONSE_LIMIT = 1_000_000;

export async function runtimeList(ctx: ServiceContext) {
  return { runtimes: await ctx.deps.probes.list() };
}

export function getTask(ctx: ServiceContext, taskId: string): TaskObject {
  const task = isTaskId(taskId) ? ctx.store.getTaskObject(taskId) : null;
  if (!task) throw notFound();
  return task;
}

export function listTasks(ctx: ServiceContext, p: { status?: string | null; limit?: number; before_task_id?: string | null }) {
  const status = p.status ?? undefined;
  if (status !== undefined && !(TASK_STATUSES as readonly string[]).includes(status)) {
    throw new ServerFsError("INVALID_REQUEST", "status is not a task status");
  }
  const page = ctx.store.listTaskObjects({
    status: status as TaskStatus | undefined,
    limit: p.limit ?? 100,
    beforeTaskId: p.before_task_id ?? undefined,
  });
  return { tasks: page.tasks, next_before_task_id: page.nextBeforeTaskId };
}

export async function readEvents(
  ctx: ServiceContext,
  p: { task_id: string; after_event_id?: number; limit?: number; wait_ms?: number },
  signal?: AbortSignal,
) {
  const task = ctx.requireTask(p.task_id);
  const after = p.after_event_id ?? 0;
  const limit = p.limit ?? 100;
  const waitMs = p.wait_ms ?? 0;
  if (after < 0 || limit < 1 || limit > 500 || waitMs < 0 || waitMs > 25_000) {
    throw new ServerFsError("INVALID_LIMIT", "after_event_id must be ≥ 0, limit 1..500 and wait_ms 0..25000");
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
  };
}

export async function readResult(ctx: ServiceContext, p: { task_id: string; offset_bytes?: number; max_bytes?: number }) {
  const task = ctx.requireTask(p.task_id);
  if (task.result_storage !== "spool" || task.result_size_bytes === null) {
    throw new ServerFsError("AGENT_RESULT_NOT_RETRIEVABLE", "the task has no spooled result; read final_response from get_agent_task");
  }
  const maxBytes = p.max_bytes ?? RESULT_PREVIEW_BYTES;
  const offset = p.offset_bytes ?? 0;
  if (maxBytes < 1 || maxBytes > 65_536) throw new ServerFsError("INVALID_RESULT_LIMIT", "max_bytes must be 1..65536");
  if (offset < 0) throw new ServerFsError("INVALID_RESULT_OFFSET", "offset_bytes must be ≥ 0");
  const chunk = await ctx.deps.spool.readSpoolChunk(ctx.deps.config.bridge.stateDir, task.task_id, task.result_size_bytes, offset, maxBytes);
  return { ...chunk, correlation_id: task.correlation_id };
}
