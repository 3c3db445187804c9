/**
 * MCP Tasks on the Bridge (docs/mcp-tasks.md), revision 2025-11-25 as the SDK's experimental tasks
 * API serves it: the capability, the task-augmented submit_agent_task, and tasks/result. The SDK's
 * own handlers serve tasks/get, tasks/list and tasks/cancel through the Bridge-backed store.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { type CreateTaskResult, ErrorCode, GetTaskPayloadRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import type { BridgeCaller } from "../agent/agent-tool.ts";
import type { McpDeps } from "../deps.ts";
import type { ToolDef } from "../tool.ts";
import { BridgeTaskStore } from "./bridge-task-store.ts";
import type { PendingRequestHook } from "./elicitation-seam.ts";
import { rpcError } from "./rpc-error.ts";
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
      throw Object.assign(new Error(`${tool.name} cannot be called as a task`), { code: ErrorCode.MethodNotFound });
    }
    const { result, error } = await run();
    if (error !== null) throw rpcError(error);
    const taskId = (result.structuredContent as { task_id: string }).task_id;
    return { task: await this.store.createTask({ context: { task_id: taskId } }) };
  }

  serve(server: Server): void {
    server.setRequestHandler(GetTaskPayloadRequestSchema, (request, extra) =>
      awaitTaskResult(request.params.taskId, extra, {
        store: this.store,
        bridge: this.opts.bridge,
        onPendingRequest: this.opts.onPendingRequest,
        signal: this.opts.signal,
      }),
    );
  }
}
