/** What every MCP tool factory receives: the frozen config, the workdirs and the audit log. */
import type { AuditLog } from "../../shared/audit.ts";
import type { Config } from "../../shared/config/load.ts";
import { ServerFsError } from "../../shared/errors.ts";
import type { Workspace, Workspaces } from "../../shared/workspace.ts";

export interface McpDeps {
  config: Config;
  workspaces: Workspaces;
  audit: AuditLog;
}

export function requireWorkspace(deps: McpDeps, alias: string): Workspace {
  const ws = deps.workspaces.get(alias);
  if (!ws) throw new ServerFsError("WORKDIR_NOT_FOUND", "no workdir has this alias; call list_workdirs");
  return ws;
}
