/**
 * `respond_agent_approval` (docs/mcp-tools.md#agent-tool-parameters): a human's decision on a pending approval, one
 * `task.approval.respond`.
 */
import * as v from "valibot";
import { choiceParam, listParam, textParam } from "../params.ts";
import type { ToolDef } from "../tool.ts";
import { type AgentDeps, agentAnnotations, proxyTool, taskIdParam } from "./agent-tool.ts";
import { ResolvedResult } from "./schemas.ts";

export function respondAgentApproval(deps: AgentDeps): ToolDef {
  return proxyTool(deps, {
    name: "respond_agent_approval",
    title: "Respond to an agent approval",
    description: "Answer a pending approval with a human's decision: approve_once, approve_session, deny, or cancel_task (which also cancels the task).",
    annotations: agentAnnotations(false, true, true),
    input: v.strictObject({
      task_id: taskIdParam(),
      request_id: textParam("The pending approval's request_id, from get_agent_task or its event."),
      decision: choiceParam(
        ["approve_once", "approve_session", "deny", "cancel_task"],
        "The human's decision, one the request offers (its available_decisions); cancel_task also cancels the task.",
      ),
      granted_permission_ids: v.optional(
        listParam(textParam("A permission id."), "For a permission request: the ids of the requested permissions to grant, exactly these; absent grants none."),
      ),
    }),
    output: ResolvedResult,
    method: "task.approval.respond",
    params: (a) => ({
      task_id: a.task_id,
      request_id: a.request_id,
      decision: a.decision,
      ...(a.granted_permission_ids ? { granted_permission_ids: a.granted_permission_ids } : {}),
    }),
    audit: (a, _r, call) => {
      Object.assign(call.audit, { request_id: a.request_id, decision: a.decision });
    },
  });
}
