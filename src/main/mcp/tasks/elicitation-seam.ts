/**
 * The one seam between MCP tasks and elicitation (docs/mcp-tasks.md#waiting). While tasks/result
 * waits and the task has a pending approval or question that this call has not handed over yet, it
 * awaits the hook once for that request, then reads the task again. The hook may send
 * `elicitation/create` on the call's own related-request stream (`ctx.mcpReq.send`) and answer the
 * Bridge with what the human chose; returning without an answer is fine: the wait goes on, and the
 * host can still answer with respond_agent_approval or answer_agent_question. A hook that throws ends
 * that tasks/result with its error. It is given as `McpTasksOptions.onPendingRequest` where server.ts
 * builds McpTasks, where it is `elicitPending` (src/main/mcp/agent/elicitation/elicit-pending.ts).
 */
import type { ServerContext } from "@modelcontextprotocol/server";
import type { BridgeTask } from "./mcp-task.ts";

export type PendingRequestHook = (task: BridgeTask & { pending_request: NonNullable<BridgeTask["pending_request"]> }, ctx: ServerContext) => Promise<void>;
