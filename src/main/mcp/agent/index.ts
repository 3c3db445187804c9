/** The nine Agent tools in the order of docs/mcp-tools.md#registration, each one RPC through the Bridge client. */
import type { McpDeps } from "../deps.ts";
import { AGENT_SCOPE } from "../oauth/scopes.ts";
import type { ToolDef } from "../tool.ts";
import type { AgentDeps, BridgeCaller } from "./agent-tool.ts";
import { listAgentRuntimes } from "./list-agent-runtimes.ts";
import { proxyTools } from "./proxy-tools.ts";
import { submitAgentTask } from "./submit-agent-task.ts";

export function agentTools(deps: McpDeps, bridge: BridgeCaller): ToolDef[] {
  const agent: AgentDeps = { ...deps, bridge };
  const p = proxyTools(agent);
  const tools = [
    listAgentRuntimes(agent),
    submitAgentTask(agent),
    p["get_agent_task"]!,
    p["read_agent_task_events"]!,
    p["respond_agent_approval"]!,
    p["answer_agent_question"]!,
    p["send_agent_message"]!,
    p["cancel_agent_task"]!,
    p["read_agent_task_result"]!,
  ];
  // Delegating work is its own right, whether the tool only looks (get_agent_task) or not.
  return tools.map((t) => ({ ...t, scope: AGENT_SCOPE }));
}
