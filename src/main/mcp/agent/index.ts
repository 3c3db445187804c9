/** The nine Agent tools in the order of docs/mcp-tools.md#registration, each one RPC through the Bridge client. */
import type { McpDeps } from "../deps.ts";
import { AGENT_SCOPE } from "../oauth/scopes.ts";
import type { ToolDef } from "../tool.ts";
import type { AgentDeps, BridgeCaller } from "./agent-tool.ts";
import { answerAgentQuestion } from "./answer-agent-question.ts";
import { cancelAgentTask } from "./cancel-agent-task.ts";
import { getAgentTask } from "./get-agent-task.ts";
import { listAgentRuntimes } from "./list-agent-runtimes.ts";
import { readAgentTaskEvents } from "./read-agent-task-events.ts";
import { readAgentTaskResult } from "./read-agent-task-result.ts";
import { respondAgentApproval } from "./respond-agent-approval.ts";
import { sendAgentMessage } from "./send-agent-message.ts";
import { submitAgentTask } from "./submit-agent-task.ts";

export function agentTools(deps: McpDeps, bridge: BridgeCaller): ToolDef[] {
  const agent: AgentDeps = { ...deps, bridge };
  const tools = [
    listAgentRuntimes(agent),
    submitAgentTask(agent),
    getAgentTask(agent),
    readAgentTaskEvents(agent),
    respondAgentApproval(agent),
    answerAgentQuestion(agent),
    sendAgentMessage(agent),
    cancelAgentTask(agent),
    readAgentTaskResult(agent),
  ];
  // Delegating work is its own right, whether the tool only looks (get_agent_task) or not.
  return tools.map((t) => ({ ...t, scope: AGENT_SCOPE }));
}
