/**
 * A Bridge task object as an MCP task (docs/mcp-tasks.md#status-mapping). The MCP `taskId` is the
 * ServerFS `task_id` itself: nothing is kept in this process, so any `serverfs mcp`, a restarted one
 * included, answers for any task the Bridge knows.
 */
import type { Task } from "@modelcontextprotocol/server";
import type { Result } from "../../../shared/bridge-protocol/results.ts";

export type BridgeTask = Result<"task.get">;

/** The pace suggested to hosts that poll tasks/get; each poll is one `task.get` RPC. */
export const POLL_INTERVAL_MS = 2_000;

/** A Bridge task status as an MCP task status (2025-11-25; the 2026-07-28 extension differs for ended agents, ext-tasks.ts). */
export const MCP_TASK_STATUS: Record<BridgeTask["status"], Task["status"]> = {
  queued: "working",
  starting: "working",
  running: "working",
  waiting_for_approval: "input_required",
  waiting_for_question: "input_required",
  succeeded: "completed",
  failed: "failed",
  interrupted: "failed",
  cancelled: "cancelled",
};

export const isTerminalTask = (task: BridgeTask) => ["completed", "failed", "cancelled"].includes(MCP_TASK_STATUS[task.status]);

/**
 * `ttlMs` is the Bridge's retention: it collects a task that long after it ended, so from its
 * creation the task lives at least that long.
 */
export function toMcpTask(task: BridgeTask, ttlMs: number): Task {
  return {
    taskId: task.task_id,
    status: MCP_TASK_STATUS[task.status],
    statusMessage: statusMessage(task),
    createdAt: task.created_at,
    lastUpdatedAt: task.updated_at,
    ttl: ttlMs,
    pollInterval: POLL_INTERVAL_MS,
  };
}

/** The ServerFS status, which the MCP one folds (queued and running are both "working"), and a failure's code and message. */
export function statusMessage(task: BridgeTask): string {
  if (task.error_code === null) return task.status;
  return task.error_message ? `${task.status}: ${task.error_code}: ${task.error_message}` : `${task.status}: ${task.error_code}`;
}
