/**
 * MCP Tasks on the Bridge (docs/mcp-tasks.md), revision 2025-11-25: the capability, the
 * task-augmented submit_agent_task, and the four tasks methods, tasks/get, tasks/list, tasks/cancel
 * and tasks/result. The SDK's v2 line serves none of them itself any more (it keeps their wire
 * types only), so their answers, errors included, are the ones the v1 line's own handlers gave
 * (`LegacyError`): a 2025-era client sees the same bytes as before.
 */
import { type CreateTaskResult, ProtocolErrorCode, type Server } from "@modelcontextprotocol/server";
import * as v from "valibot";
import type { BridgeCaller } from "../agent/agent-tool.ts";
import type { McpDeps } from "../deps.ts";
import type { ToolDef } from "../tool.ts";
import { BridgeTaskStore } from "./bridge-task-store.ts";
import type { PendingRequestHook } from "./elicitation-seam.ts";
import { NotATaskId, rpcError } from "./rpc-error.ts";
import { awaitTaskResult } from "./task-result.ts";
import type { ToolOutcome, ToolResult } from "./tool-outcome.ts";

export const TASKS_CAPABILITY = { list: {}, cancel: {}, requests: { tools: { call: {} } } };

export interface McpTasksOptions {
  bridge: BridgeCaller;
  deps: McpDeps;
  /** get_agent_task for this task: what tasks/result answers once it has ended. */
  finalResult(taskId: string): Promise<ToolResult>;
  onPendingRequest?: PendingRequestHook;
  signal: AbortSignal;
}

export class McpTasks {
  readonly store: BridgeTaskStore;

  constructor(private readonly opts: McpTasksOptions) {
    this.store = new BridgeTaskStore({
      bridge: opts.bridge,
      finalResult: opts.finalResult,
      ttlMs: opts.deps.config.bridge.lifecycle.retention_hours * 3_600_000,
      audit: opts.deps.audit,
      signal: opts.signal,
    });
  }

  /**
   * A task-augmented tools/call: the tool's own checks and RPC, then the Bridge task it created as an
   * MCP task. A refusal has no task to show, so it is a JSON-RPC error; a tool that does not declare
   * task support is "method not found", as MCP prescribes.
   */
  async call(tool: ToolDef, run: () => Promise<ToolOutcome>): Promise<CreateTaskResult> {
    if (tool.taskSupport === undefined) {
      throw Object.assign(new Error(`${tool.name} cannot be called as a task`), { code: ProtocolErrorCode.MethodNotFound });
    }
    const { result, error } = await run();
    if (error !== null) throw rpcError(error);
    const taskId = (result.structuredContent as { task_id: string }).task_id;
    return { task: await this.store.adopt(taskId) };
  }

  serve(server: Server): void {
    const store = this.store;
    server.setRequestHandler("tasks/get", { params: TaskParams }, async ({ taskId }) => {
      const task = await store.getTask(taskId);
      if (!task) throw new LegacyError(ProtocolErrorCode.InvalidParams, "Failed to retrieve task: Task not found");
      return { ...task };
    });
    server.setRequestHandler("tasks/list", { params: ListParams }, async ({ cursor }) => {
      try {
        const { tasks, nextCursor } = await store.listTasks(cursor);
        return { tasks, nextCursor, _meta: {} };
      } catch (e) {
        throw new LegacyError(ProtocolErrorCode.InvalidParams, `Failed to list tasks: ${messageOf(e)}`);
      }
    });
    server.setRequestHandler("tasks/cancel", { params: TaskParams }, async ({ taskId }) => {
      try {
        const task = await store.getTask(taskId);
        if (!task) throw new LegacyError(ProtocolErrorCode.InvalidParams, `Task not found: ${taskId}`);
        if (TERMINAL.has(task.status)) throw new LegacyError(ProtocolErrorCode.InvalidParams, `Cannot cancel task in terminal status: ${task.status}`);
        await store.cancel(taskId);
        const cancelled = await store.getTask(taskId);
        if (!cancelled) throw new LegacyError(ProtocolErrorCode.InvalidParams, `Task not found after cancellation: ${taskId}`);
        return { _meta: {}, ...cancelled };
      } catch (e) {
        if (e instanceof LegacyError || e instanceof NotATaskId) throw e;
        throw new LegacyError(ProtocolErrorCode.InvalidRequest, `Failed to cancel task: ${messageOf(e)}`);
      }
    });
    server.setRequestHandler("tasks/result", { params: TaskParams }, ({ taskId }, ctx) =>
      awaitTaskResult(taskId, ctx, {
        store,
        bridge: this.opts.bridge,
        onPendingRequest: this.opts.onPendingRequest,
        signal: this.opts.signal,
      }),
    );
  }
}

const TaskParams = v.looseObject({ taskId: v.string() });
const ListParams = v.looseObject({ cursor: v.optional(v.string()) });
const TERMINAL: ReadonlySet<string> = new Set(["completed", "failed", "cancelled"]);

const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** An error as the v1 line's `McpError` put it on the wire: its message starts `MCP error <code>: `. */
class LegacyError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(`MCP error ${code}: ${message}`);
  }
}
