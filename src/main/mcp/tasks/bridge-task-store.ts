/**
 * MCP tasks read from the Bridge (docs/mcp-tasks.md#durability): every answer is read from the
 * Bridge when it is asked for, nothing is kept in this process, so a restart of `serverfs mcp` loses
 * nothing. The tasks handlers (mcp-tasks.ts) serve tasks/get, tasks/list and tasks/cancel through it.
 *
 * The Bridge owns a task's status and result; the MCP side never sets either. So `adopt` answers the
 * task `task.submit` just created, and `cancel` is the one change it asks of the Bridge (`task.cancel`).
 */
import type { Task } from "@modelcontextprotocol/server";
import type { AuditLog } from "../../../shared/audit.ts";
import { RelayedError, ServerFsError } from "../../../shared/errors.ts";
import { isTaskId } from "../../../shared/ids.ts";
import type { BridgeCaller } from "../agent/agent-tool.ts";
import { stripTaskIds } from "../agent/schemas.ts";
import { type BridgeTask, toMcpTask } from "./mcp-task.ts";
import { notATaskId, rpcError } from "./rpc-error.ts";
import type { ToolResult } from "./tool-outcome.ts";

/** Tasks per tasks/list page, newest first; a page the Bridge finds over 1 MiB is asked for again in halves. */
export const TASKS_PAGE_SIZE = 10;

export interface BridgeTaskStoreOptions {
  bridge: BridgeCaller;
  /** What tasks/result answers for a terminal task: get_agent_task's result for it. */
  finalResult(taskId: string): Promise<ToolResult>;
  /** The Bridge's retention, the lower bound of every task's life (docs/mcp-tasks.md#status-mapping). */
  ttlMs: number;
  /** tasks/cancel writes a `tasks_cancel` record: it is the one tasks method that changes a task. */
  audit: AuditLog;
  /** The process is going away. */
  signal: AbortSignal;
}

const isNotFound = (e: unknown) => e instanceof ServerFsError && e.code === "AGENT_TASK_NOT_FOUND";

export class BridgeTaskStore {
  constructor(private readonly opts: BridgeTaskStoreOptions) {}

  /**
   * The task as get_agent_task would show it; an unknown id is AGENT_TASK_NOT_FOUND. Every tasks
   * method reads the task first, so an id that cannot be one stops here, before the Bridge.
   */
  async read(taskId: string, signal = this.opts.signal): Promise<BridgeTask> {
    if (!isTaskId(taskId)) throw notATaskId();
    return stripTaskIds(await this.opts.bridge("task.get", { task_id: taskId }, { signal }));
  }

  async getTask(taskId: string): Promise<Task | null> {
    try {
      return toMcpTask(await this.read(taskId), this.opts.ttlMs);
    } catch (e) {
      if (isNotFound(e)) return null;
      throw rpcError(e);
    }
  }

  /** The Bridge task `task.submit` has just created, as an MCP task. */
  async adopt(taskId: string): Promise<Task> {
    try {
      return toMcpTask(await this.read(taskId), this.opts.ttlMs);
    } catch (e) {
      throw rpcError(e);
    }
  }

  async listTasks(cursor?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    // the cursor is a task id too
    if (cursor !== undefined && !isTaskId(cursor)) throw notATaskId();
    for (let limit = TASKS_PAGE_SIZE; ; limit = Math.ceil(limit / 2)) {
      try {
        const page = await this.opts.bridge("task.list", { limit, before_task_id: cursor ?? null }, { signal: this.opts.signal });
        const tasks = page.tasks.map((t) => toMcpTask(t, this.opts.ttlMs));
        return page.next_before_task_id === null ? { tasks } : { tasks, nextCursor: page.next_before_task_id };
      } catch (e) {
        if (e instanceof ServerFsError && e.code === "RESPONSE_TOO_LARGE" && limit > 1) continue;
        throw rpcError(e);
      }
    }
  }

  async cancel(taskId: string): Promise<void> {
    try {
      const answer = await this.opts.bridge("task.cancel", { task_id: taskId }, { signal: this.opts.signal });
      this.opts.audit.info("tasks_cancel", { task_id: taskId, success: true, status: answer.status });
    } catch (e) {
      const code = e instanceof RelayedError ? e.relayedCode : e instanceof ServerFsError ? e.code : "AGENT_BRIDGE_ERROR";
      this.opts.audit.info("tasks_cancel", { task_id: taskId, success: false, error_code: code });
      throw rpcError(e);
    }
  }

  getTaskResult(taskId: string): Promise<ToolResult> {
    return this.opts.finalResult(taskId);
  }
}
