/**
 * `serverfs mcp` startup (docs/mcp-tools.md#startup): load and validate the config, check each root,
 * register tools, emit the `startup` audit event, then serve. It never contacts the Bridge, opens
 * lock files or walks a workdir.
 */
import { AuditLog, type AuditSink } from "../../shared/audit.ts";
import { openAuditLog } from "../../shared/audit-file.ts";
import { BridgeClient } from "../../shared/bridge-protocol/client.ts";
import { type Config, ConfigError, loadConfig } from "../../shared/config/load.ts";
import { VERSION } from "../../shared/version.ts";
import { Workspaces } from "../../shared/workspace.ts";
import type { BridgeCaller } from "./agent/agent-tool.ts";
import type { McpDeps } from "./deps.ts";
import { HeavyCalls } from "./heavy-calls.ts";
import type { ToolDef } from "./tool.ts";
import { agentToolsEnabled, buildTools } from "./tools/index.ts";
import type { Transport } from "./transfer-limit.ts";

export interface McpRuntime {
  deps: McpDeps;
  tools: ToolDef[];
  agentTools: boolean;
  /** The Bridge, when the Agent tools are registered (they and MCP Tasks reach it). */
  bridge: BridgeCaller | null;
}

/** `sink` takes the audit lines instead of stderr (the tests' in-process server, test/helpers/mcp-in-process.ts). */
export function prepareMcp(configPath: string | undefined, transport: Transport, sink?: AuditSink): McpRuntime {
  let config: Config;
  let workspaces: Workspaces;
  let audit: AuditLog;
  try {
    config = loadConfig({ role: "mcp", configPath });
    workspaces = new Workspaces(config);
    audit = sink ? new AuditLog(config.server.log_level, sink) : openAuditLog(config.server.log_level, config.audit);
  } catch (e) {
    const reason = e instanceof ConfigError ? e.message : "workdir roots could not be resolved";
    new AuditLog("info").error("startup_failed", { reason });
    throw e instanceof ConfigError ? e : new ConfigError(reason);
  }
  const deps: McpDeps = { config, workspaces, audit, heavy: new HeavyCalls(config.limits), transport };
  const agentTools = agentToolsEnabled(deps);
  // One client per server: a fresh connection per call, nothing opened at startup (docs/mcp-tools.md#startup).
  const client = agentTools ? BridgeClient.fromConfig(config) : null;
  const bridge: BridgeCaller | null = client && ((method, params, opts) => client.call(method, params, opts));
  return { deps, tools: buildTools(deps, bridge), agentTools, bridge };
}

export function auditStartup(rt: McpRuntime, transport: "stdio" | "http", listen?: string): void {
  const { config, workspaces, audit } = rt.deps;
  const list = workspaces.list;
  audit.info("startup", {
    version: VERSION,
    transport,
    listen,
    workdirs: list.length,
    read_write_workdirs: list.filter((w) => !w.policy.read_only).length,
    binary_transfer_workdirs: list.filter((w) => w.policy.binary_transfer_enabled).length,
    agent_enabled_workdirs: list.filter((w) => w.policy.agent_mode !== "disabled").length,
    workdirs_with_policy_overrides: list.filter((w) => w.workdir.overrides.length > 0).length,
    log_level: config.server.log_level,
    global_allow_hidden: config.file.defaults.allow_hidden,
    global_default_deny_enabled: !config.file.defaults.disable_default_deny,
    global_extra_deny_rule_count: config.file.defaults.extra_deny_globs.length,
    agent_bridge_enabled: config.bridge.enabled,
    tool_count: rt.tools.length,
  });
}
