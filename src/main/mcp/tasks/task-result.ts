/**
 * tasks/result (docs/mcp-tasks.md#waiting): it answers once the task has ended, with exactly what
 * get_agent_task answers for it then. Until then it waits on the Bridge in bounded long-polls
 * (`task.events` with `wait_ms` at the Bridge's 25 s ceiling, docs/bridge-rpc.md#long-polls), reading
 * the task again after each. With a progressToken on the request, every event that arrives becomes a
 * `notifications/progress` (its type and a short summary). A pending approval or question is handed
 * to the elicitation seam once per request.
 */
import { RELATED_TASK_META_KEY, type ServerContext } from "@modelcontextprotocol/server";
import type { BridgeCaller } from "../agent/agent-tool.ts";
import type { BridgeTaskStore } from "./bridge-task-store.ts";
import type { PendingRequestHook } from "./elicitation-seam.ts";
import { isTerminalTask } from "./mcp-task.ts";
import { progressMessage } from "./progress-message.ts";
import { rpcError } from "./rpc-error.ts";
import type { ToolResult } from "./tool-outcome.ts";

/** One long-poll's bound: the most `task.events` waits (docs/bridge-rpc.md#limits). */
export const LONG_POLL_MS = 25_000;
const EVENTS_PER_POLL = 100;

export interface TaskResultDeps {
  store: BridgeTaskStore;
  bridge: BridgeCaller;
  onPendingRequest: PendingRequestHook | undefined;
  /** The process is going away. */
  signal: AbortSignal;
}

export async function awaitTaskResult(taskId: string, ctx: ServerContext, deps: TaskResultDeps): Promise<ToolResult> {
  const signal = AbortSignal.any([ctx.mcpReq.signal, deps.signal]);
  const progressToken = ctx.mcpReq._meta?.progressToken;
  let cursor = 0;
  let progress = 0;
  let handedOver: string | null = null;
  try {
    for (;;) {
      const task = await deps.store.read(taskId, signal);
      if (isTerminalTask(task)) {
        const result = await deps.store.getTaskResult(taskId);
        return { ...result, _meta: { ...result._meta, [RELATED_TASK_META_KEY]: { taskId } } };
      }
      const pending = task.pending_request;
      if (deps.onPendingRequest && pending && pending.request_id !== handedOver) {
        handedOver = pending.request_id;
        await deps.onPendingRequest({ ...task, pending_request: pending }, ctx);
        continue;
      }
      const page = await deps.bridge(
        "task.events",
        { task_id: taskId, after_event_id: cursor, limit: EVENTS_PER_POLL, wait_ms: LONG_POLL_MS },
        { signal, extraTimeoutMs: LONG_POLL_MS },
      );
      if (progressToken !== undefined) {
        for (const e of page.events) {
          await ctx.mcpReq.notify({
            method: "notifications/progress",
            params: { progressToken, progress: ++progress, message: progressMessage(e.event_type, e.payload) },
          });
        }
      }
      cursor = page.next_after_event_id;
    }
  } catch (e) {
    throw rpcError(e);
  }
}
