/**
 * `cancel_agent_task` (docs/mcp-tools.md#agent-tool-parameters): one `task.cancel`, idempotent.
 */
import * as v from "valibot";
import type { ToolDef } from "../tool.ts";
import { type AgentDeps, agentAnnotations, proxyTool, taskIdParam } from "./agent-tool.ts";
import { CancelResult } from "./schemas.ts";

export function cancelAgentTask(deps: AgentDeps): ToolDef {
  return proxyTool(deps, {
    name: "cancel_agent_task",
    title: "Cancel an agent task",
    description: "Cancel a task; repeating the call is safe and answers the task's terminal status.",
    annotations: agentAnnotations(false, true, true),
    input: v.strictObject({ task_id: taskIdParam() }),
    output: CancelResult,
    method: "task.cancel",
    params: (a) => ({ task_id: a.task_id }),
    audit: (_a, r, call) => {
      call.audit["status"] = r.status;
    },
  });
}
