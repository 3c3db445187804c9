/**
 * What every MCP tool factory receives: the frozen config, the workdirs, the audit log, the
 * bound on heavy calls (with the walk pool behind it) and the transport.
 */
import type { AuditFields, AuditLog } from "../../shared/audit.ts";
import type { Config } from "../../shared/config/load.ts";
import { ServerFsError } from "../../shared/errors.ts";
import type { Workspace, Workspaces } from "../../shared/workspace.ts";
import type { TreeTarget } from "../../workers/walk/tree-job.ts";
import type { HeavyCalls } from "./heavy-calls.ts";
import type { Transport } from "./transfer-limit.ts";

export interface McpDeps {
  config: Config;
  workspaces: Workspaces;
  audit: AuditLog;
  heavy: HeavyCalls;
  /** What carries the calls: it bounds binary transfers (transfer-limit.ts). */
  transport: Transport;
}

export function requireWorkspace(deps: McpDeps, alias: string): Workspace {
  const ws = deps.workspaces.get(alias);
  if (!ws) throw new ServerFsError("WORKDIR_NOT_FOUND", "no workdir has this alias; call list_workdirs");
  return ws;
}

export interface ReadTarget {
  ws: Workspace;
  path: string;
  segments: string[];
  /** `alias:path`, the prefix of this target's messages. */
  where: string;
}

/**
 * The read side's first three checks (docs/mcp-tools.md#read-tools): the workdir, then confinement; the
 * normalized path enters the audit record only once confinement succeeded.
 */
export function readTarget(deps: McpDeps, audit: AuditFields, workdir: string, rawPath: string): ReadTarget {
  const ws = requireWorkspace(deps, workdir);
  const { path, segments } = ws.confine(rawPath);
  audit["path"] = path;
  return { ws, path, segments, where: ws.where(path) };
}

/** A confined target as a walk-pool job carries it to the worker (src/workers/walk/tree-job.ts). */
export function treeTarget(t: ReadTarget): TreeTarget {
  const { allow_hidden, disable_default_deny, extra_deny_globs } = t.ws.policy;
  return { realRoot: t.ws.realRoot, path: t.path, segments: t.segments, where: t.where, policy: { allow_hidden, disable_default_deny, extra_deny_globs } };
}
