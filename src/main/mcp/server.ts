/**
 * The MCP server on the SDK's low-level `Server`, so that every shape is the contract's
 * (docs/mcp-tools.md#results-and-errors): unknown tools are JSON-RPC errors, validation failures are
 * `INVALID_ARGUMENT`, `listChanged` is false, and resource errors carry `CODE: message` verbatim.
 * With the Bridge it also serves MCP Tasks (docs/mcp-tasks.md, `tasks/`).
 */
import { ProtocolErrorCode, type ServerOptions } from "@modelcontextprotocol/server";
import * as v from "valibot";
import type { AuditFields } from "../../shared/audit.ts";
import { errorTrace } from "../../shared/error-trace.ts";
import { RelayedError, ServerFsError } from "../../shared/errors.ts";
import { VERSION } from "../../shared/version.ts";
import type { BridgeCaller } from "./agent/agent-tool.ts";
import { elicitPending } from "./agent/elicitation/elicit-pending.ts";
import { askerFor, type ClientSession, roundTripOf } from "./client-session.ts";
import type { McpDeps } from "./deps.ts";
import { serverInstructions } from "./instructions.ts";
import { identityAudit, identityOf } from "./oauth/identity.ts";
import { scopeOf } from "./oauth/scopes.ts";
import { RESOURCE_TEMPLATE, readResource } from "./resource.ts";
import { declaresTasks, ExtTasks, TASKS_EXTENSION } from "./tasks/ext-tasks.ts";
import { McpTasks, TASKS_CAPABILITY } from "./tasks/mcp-tasks.ts";
import type { ToolOutcome } from "./tasks/tool-outcome.ts";
import { bulkLast, CallRefused, describeArgumentIssue, dropNulls, InputNeeded, jsonSchemaOf, type ToolCall, type ToolDef, WithContent } from "./tool.ts";
import { WireServer } from "./wire-server.ts";

export interface McpServerOptions {
  deps: McpDeps;
  tools: ToolDef[];
  agentTools: boolean;
  /** The Bridge, when the Agent tools are registered: MCP Tasks are served from it. */
  bridge: BridgeCaller | null;
  /** Aborted when the process is going away; long calls stop early. */
  signal: AbortSignal;
  /**
   * The protocol era this server serves (docs/protocol.md): `legacy` is revision 2025-11-25 and its
   * predecessors, one server per session; `modern` is 2026-07-28, which has no 2025-11-25 tasks.
   */
  era: "legacy" | "modern";
  /**
   * One server per request (2026-07-28 over HTTP): no session, so no set of tasks it submitted
   * (docs/decisions.md#elicitation).
   */
  stateless?: boolean;
}

const ListToolsParams = v.looseObject({ cursor: v.optional(v.string()) });
const CallToolParams = v.looseObject({ name: v.string(), arguments: v.optional(v.record(v.string(), v.unknown())), task: v.optional(v.unknown()) });

/**
 * How long a 2026-07-28 client may reuse a result (docs/protocol.md; a 2025-era result never carries
 * it). The tool list, the resource template and discover are fixed for the process's config: a
 * minute. The config is one deployment's, so no cache shared between users may keep them: private.
 * A file's content, and the resource list, not at all.
 */
const CACHE_HINTS: ServerOptions["cacheHints"] = {
  "server/discover": { ttlMs: 60_000, cacheScope: "private" },
  "tools/list": { ttlMs: 60_000, cacheScope: "private" },
  "resources/templates/list": { ttlMs: 60_000, cacheScope: "private" },
  "resources/list": { ttlMs: 0, cacheScope: "private" },
  "resources/read": { ttlMs: 0, cacheScope: "private" },
};

function errorResult(e: ServerFsError) {
  return { isError: true, content: [{ type: "text", text: e.toText() }] };
}

/**
 * The tool list of `tools`, built at its first tools/list, not at start: the JSON Schemas cost
 * milliseconds that `initialize` need not wait for (docs/performance.md, cold start). Kept per tool
 * set, not per server, since a 2026-07-28 HTTP request builds a server of its own.
 */
const listings = new WeakMap<ToolDef[], unknown[]>();
function listingOf(tools: ToolDef[]): unknown[] {
  let listing = listings.get(tools);
  if (listing === undefined) {
    listing = tools.map((t) => ({
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: jsonSchemaOf(t.input),
      outputSchema: jsonSchemaOf(t.output),
      annotations: { title: t.title, ...t.annotations },
      ...(t.taskSupport ? { execution: { taskSupport: t.taskSupport } } : {}),
    }));
    listings.set(tools, listing);
  }
  return listing;
}

export function createMcpServer(opts: McpServerOptions): WireServer {
  const { deps, tools } = opts;
  const byName = new Map(tools.map((t) => [t.name, t]));
  // One server serves one MCP session (stdio, or one Streamable HTTP session), so this is that session's;
  // over HTTP a 2026-07-28 server serves one request. A 2026-07-28 connection has no initialize, so no
  // client capabilities: `askerFor` asks it nothing, its forms go by round trip (`roundTripOf`).
  const session: ClientSession = { submitted: new Set(), stateless: opts.stateless ?? false };
  const getAgentTask = byName.get("get_agent_task");
  const bridge = opts.bridge;
  // what a task's final answer is: get_agent_task's for it
  const finalResult =
    getAgentTask &&
    (async (taskId: string) =>
      (
        await callTool(
          getAgentTask,
          { task_id: taskId },
          deps,
          { signal: opts.signal, session, ask: null, rounds: null, identity: null },
          server.getNegotiatedProtocolVersion(),
        )
      ).result);
  // 2025-11-25 tasks on a 2025-era server, the 2026-07-28 extension on a modern one (docs/mcp-tasks.md)
  const extTasks = bridge && finalResult && opts.era === "modern" ? new ExtTasks({ deps: { ...deps, bridge }, finalResult, signal: opts.signal }) : null;
  const tasks =
    bridge && finalResult && opts.era === "legacy"
      ? new McpTasks({
          bridge,
          deps,
          finalResult,
          // a pending request seen while tasks/result waits is asked as a form on that call's stream (docs/elicitation.md)
          onPendingRequest: async (task, ctx) => {
            const ask = askerFor(server, deps.config.server.elicitation, ctx, opts.signal);
            const call: ToolCall = {
              audit: { tool: "tasks/result" },
              signal: opts.signal,
              session,
              ask,
              rounds: null,
              identity: identityOf(ctx.http?.authInfo),
            };
            await elicitPending({ ...deps, bridge }, call, task.task_id, task);
          },
          signal: opts.signal,
        })
      : null;

  const server = new WireServer(
    { name: "ServerFS", version: VERSION },
    {
      capabilities: {
        tools: { listChanged: false },
        resources: { listChanged: false },
        ...(tasks ? { tasks: TASKS_CAPABILITY } : {}),
        ...(extTasks ? { extensions: { [TASKS_EXTENSION]: {} } } : {}),
      },
      instructions: serverInstructions(opts.agentTools),
      cacheHints: CACHE_HINTS,
    },
  );

  // Both with valibot's schemas of their params: the tool list is JSON Schema made by
  // @valibot/to-json-schema, and a task-augmented call answers a CreateTaskResult, neither of which
  // the SDK's typed handlers take. An OAuth client sees only the tools its token's scopes allow
  // (docs/mcp-tools.md#oauth), in either era.
  server.setRequestHandler("tools/list", { params: ListToolsParams }, async (_params, ctx) => {
    const identity = identityOf(ctx.http?.authInfo);
    const listed = listingOf(tools);
    return { tools: identity ? listed.filter((_, i) => identity.scopes.has(scopeOf(tools[i]!))) : listed };
  });

  server.setRequestHandler("tools/call", { params: CallToolParams }, async (params, ctx) => {
    const tool = byName.get(params.name);
    if (!tool) throw Object.assign(new Error(`Unknown tool: ${params.name}`), { code: ProtocolErrorCode.InvalidParams });
    const enabled = deps.config.server.elicitation;
    const legacy = opts.era === "legacy";
    // the revision this call came in on, for the audit line (docs/protocol.md#hosts tells them apart by it)
    const protocolVersion = server.getNegotiatedProtocolVersion();
    const identity = identityOf(ctx.http?.authInfo);
    const run = () =>
      callTool(
        tool,
        params.arguments,
        deps,
        {
          signal: opts.signal,
          session,
          ask: legacy ? askerFor(server, enabled, ctx, opts.signal) : null,
          rounds: legacy ? null : roundTripOf(enabled, ctx),
          identity,
        },
        protocolVersion,
      );
    if (tasks && params.task !== undefined) return tasks.call(tool, run);
    if (extTasks && tool.taskSupport !== undefined && declaresTasks(ctx)) return extTasks.call(run);
    try {
      return (await run()).result;
    } catch (e) {
      if (e instanceof InputNeeded) return e.result;
      throw e;
    }
  });
  tasks?.serve(server);
  extTasks?.serve(server);

  server.setRequestHandler("resources/list", async () => ({ resources: [] }));
  server.setRequestHandler("resources/templates/list", async () => ({ resourceTemplates: [RESOURCE_TEMPLATE] }));
  server.setRequestHandler("resources/read", async (request, ctx) =>
    server.keepingNotFound(ctx, () => readResource(deps, request.params.uri, opts.signal, server.legacyEra)),
  );

  return server;
}

/**
 * Runs one tool and writes its `tool_call` record. A 2026-07-28 call that needs its client's input
 * first (InputNeeded) or that is refused as a request (CallRefused) leaves by its throw, after the
 * record: the tools/call handler answers the InputRequiredResult, the SDK the JSON-RPC error.
 */
async function callTool(
  tool: ToolDef,
  rawArgs: Record<string, unknown> | undefined,
  deps: McpDeps,
  context: Omit<ToolCall, "audit">,
  protocolVersion: string | undefined,
): Promise<ToolOutcome> {
  const started = performance.now();
  const audit: AuditFields = {
    tool: tool.name,
    ...(protocolVersion === undefined ? {} : { protocol_version: protocolVersion }),
    ...tool.auditFields,
    ...identityAudit(context.identity),
  };
  const args = dropNulls(rawArgs);
  if (typeof args["workdir"] === "string") audit["workdir"] = args["workdir"];
  const record = () => {
    const duration_ms = Math.round((performance.now() - started) * 10) / 10;
    deps.audit.info("tool_call", { tool: tool.name, duration_ms, ...audit });
  };
  let outcome: ToolOutcome["result"];
  let error: ServerFsError | null = null;
  try {
    const parsed = v.safeParse(tool.input, args);
    if (!parsed.success) throw new ServerFsError("INVALID_ARGUMENT", describeArgumentIssue(parsed.issues[0]));
    const result = await tool.run(parsed.output, { audit, ...context });
    const structured = bulkLast(result instanceof WithContent ? result.structured : result, tool.bulk ?? []);
    const extra = result instanceof WithContent ? result.extra : [];
    outcome = { content: [{ type: "text", text: JSON.stringify(structured) }, ...extra], structuredContent: structured };
    audit["success"] = true;
  } catch (e) {
    if (e instanceof InputNeeded || e instanceof CallRefused) {
      audit["success"] = e instanceof InputNeeded;
      if (e instanceof InputNeeded) audit["input_required"] = true;
      else audit["error_code"] = e.error.code;
      record();
      throw e;
    }
    const err = e instanceof ServerFsError ? e : unexpected(tool, e, deps);
    error = err;
    audit["success"] = false;
    audit["error_code"] = err instanceof RelayedError ? err.relayedCode : err.code;
    outcome = errorResult(err);
  }
  record();
  return { result: outcome, error };
}

/**
 * A failure no code of the tool's own: the client gets the tool's generic code, the debug log what
 * the failure was (its name, errno code and stack frames; never its message, which can hold a path).
 */
function unexpected(tool: ToolDef, e: unknown, deps: McpDeps): ServerFsError {
  deps.audit.debug("tool_unexpected_error", { tool: tool.name, ...errorTrace(e) });
  return new ServerFsError(tool.unexpected, "unexpected internal failure", { cause: e });
}
