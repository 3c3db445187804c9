/**
 * `list_agent_runtimes` (docs/mcp-tools.md#mcp-side-checks to docs/mcp-tools.md#agent-tool-results): the Bridge's runtimes filtered to the union of
 * every workdir's allowlist; with no allowlisted runtime at all, no RPC is made.
 */
import * as v from "valibot";
import { defineTool, type ToolDef } from "../tool.ts";
import { AGENT_AUDIT, AGENT_READ, type AgentDeps, expectShape } from "./agent-tool.ts";
import { RuntimesResult } from "./schemas.ts";

const FILLED = ["version", "persistent_session", "live_steer", "interactive_approval", "interactive_question", "in_flight_recovery", "models"];

export function listAgentRuntimes(deps: AgentDeps): ToolDef {
  const allowed = new Set(deps.workspaces.list.flatMap((w) => w.policy.agent_runtimes as string[]));
  return defineTool({
    name: "list_agent_runtimes",
    title: "List agent runtimes",
    description:
      "The coding-agent runtimes the workdirs allow, with availability, version, capabilities and the models a task may ask for (each with its reasoning efforts and defaults; null when unknown).",
    annotations: AGENT_READ,
    input: v.strictObject({}),
    output: RuntimesResult,
    bulk: ["runtimes"],
    unexpected: "AGENT_BRIDGE_ERROR",
    auditFields: AGENT_AUDIT,
    async run(_args, call) {
      call.audit["correlation_id"] = null;
      if (allowed.size === 0) {
        call.audit["returned"] = 0;
        return { runtimes: [] };
      }
      const raw = await deps.bridge("runtime.list", {}, { signal: call.signal });
      // A runtime whose probe failed may carry only name and available: false; the tool's shape
      // (which also puts the fields in their order) has null for what it leaves out.
      const filled = raw.runtimes
        .filter((r) => allowed.has(r.name))
        .sort((a, b) => a.name.localeCompare(b.name))
        .map((r) => Object.fromEntries([...Object.entries(r), ...FILLED.filter((k) => !(k in r)).map((k) => [k, null])]));
      const result = expectShape(RuntimesResult, { ...raw, runtimes: filled });
      call.audit["returned"] = result.runtimes.length;
      return result;
    },
  });
}
