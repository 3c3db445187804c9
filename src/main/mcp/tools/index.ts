/**
 * Registration (mcp-surface.md §3): filesystem tools always, binary tools when some workdir has
 * binary transfer, Agent tools when the Bridge is enabled and some workdir has an agent mode — in
 * the table's order, fixed at startup.
 */
import type { McpDeps } from "../deps.ts";
import type { ToolDef } from "../tool.ts";
import { listWorkdirs } from "./list-workdirs.ts";
import { statFile } from "./stat-file.ts";

export function agentToolsEnabled(deps: McpDeps): boolean {
  return deps.config.bridge.enabled && deps.workspaces.list.some((w) => w.policy.agent_mode !== "disabled");
}

export function binaryToolsEnabled(deps: McpDeps): boolean {
  return deps.workspaces.list.some((w) => w.policy.binary_transfer_enabled);
}

export function buildTools(deps: McpDeps): ToolDef[] {
  const tools: ToolDef[] = [listWorkdirs(deps), statFile(deps)];
  return tools;
}
