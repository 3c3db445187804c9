/**
 * `send_agent_message` (docs/mcp-tools.md#agent-tool-parameters): a steering message to a running task, one
 * `task.message.send`; the audit keeps its size, never its text.
 */
import * as v from "valibot";
import { LIMITS } from "../../../shared/limits.ts";
import { byteLength } from "../../../shared/utf8.ts";
import { textParam } from "../params.ts";
import type { ToolDef } from "../tool.ts";
import { type AgentDeps, agentAnnotations, proxyTool, taskIdParam } from "./agent-tool.ts";
import { MessageResult } from "./schemas.ts";

export function sendAgentMessage(deps: AgentDeps): ToolDef {
  return proxyTool(deps, {
    name: "send_agent_message",
    title: "Steer an agent task",
    description: "Send a steering message to a running task (runtimes with live steering only).",
    annotations: agentAnnotations(false, true, false),
    input: v.strictObject({ task_id: taskIdParam(), message: textParam(`The steering message, at most ${LIMITS.max_message_bytes} UTF-8 bytes.`) }),
    output: MessageResult,
    method: "task.message.send",
    params: (a) => ({ task_id: a.task_id, message: a.message }),
    audit: (a, _r, call) => {
      call.audit["message_bytes"] = byteLength(a.message);
    },
  });
}
