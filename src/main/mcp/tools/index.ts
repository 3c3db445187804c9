/**
 * Registration (docs/mcp-tools.md#registration): filesystem tools always, binary tools when some workdir has
 * binary transfer, Agent tools when the Bridge is enabled and some workdir has an agent mode — in
 * the table's order, fixed at startup.
 */

import type { BridgeCaller } from "../agent/agent-tool.ts";
import { agentTools } from "../agent/index.ts";
import type { McpDeps } from "../deps.ts";
import type { ToolDef } from "../tool.ts";
import { createDirectory } from "./create-directory.ts";
import { createTextFile } from "./create-text-file.ts";
import { deleteDirectory } from "./delete-directory.ts";
import { deleteFile } from "./delete-file.ts";
import { downloadBinaryFile } from "./download-binary-file.ts";
import { editTextFile } from "./edit-text-file.ts";
import { findFiles } from "./find-files.ts";
import { listDirectory } from "./list-directory.ts";
import { listWorkdirs } from "./list-workdirs.ts";
import { readTextFile } from "./read-text-file.ts";
import { searchText } from "./search-text.ts";
import { statFile } from "./stat-file.ts";
import { uploadBinaryFile } from "./upload-binary-file.ts";

export function agentToolsEnabled(deps: McpDeps): boolean {
  return deps.config.bridge.enabled && deps.workspaces.list.some((w) => w.policy.agent_mode !== "disabled");
}

export function binaryToolsEnabled(deps: McpDeps): boolean {
  return deps.workspaces.list.some((w) => w.policy.binary_transfer_enabled);
}

/** `bridge` is given exactly when `agentToolsEnabled`. */
export function buildTools(deps: McpDeps, bridge: BridgeCaller | null): ToolDef[] {
  const tools: ToolDef[] = [
    listWorkdirs(deps),
    listDirectory(deps),
    findFiles(deps),
    searchText(deps),
    readTextFile(deps),
    statFile(deps),
    createTextFile(deps),
    editTextFile(deps),
    deleteFile(deps),
    createDirectory(deps),
    deleteDirectory(deps),
  ];
  if (binaryToolsEnabled(deps)) tools.push(downloadBinaryFile(deps), uploadBinaryFile(deps));
  if (bridge) tools.push(...agentTools(deps, bridge));
  return tools;
}
