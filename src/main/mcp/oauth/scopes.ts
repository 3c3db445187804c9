/**
 * Scopes are rights (docs/mcp-tools.md#oauth): `serverfs:read` for the tools that only look,
 * `serverfs:write` for the mutations and upload, `serverfs:agent` for the Agent tools and MCP Tasks.
 * The HTTP gate refuses a request that needs a scope its token lacks; tools/list shows only the tools
 * the token allows.
 */
export const READ_SCOPE = "serverfs:read";
export const WRITE_SCOPE = "serverfs:write";
export const AGENT_SCOPE = "serverfs:agent";
export type Scope = typeof READ_SCOPE | typeof WRITE_SCOPE | typeof AGENT_SCOPE;

/** What of a tool (tool.ts's ToolDef) decides its scope; named here so tool.ts can import Scope without a cycle. */
interface Scoped {
  scope?: Scope;
  annotations: { readOnlyHint: boolean };
}

/** A tool's scope: the Agent tools declare theirs, every other tool is read or write by its read-only hint. */
export function scopeOf(tool: Scoped): Scope {
  return tool.scope ?? (tool.annotations.readOnlyHint ? READ_SCOPE : WRITE_SCOPE);
}

/** The scopes the registered tools need, in the order read, write, agent (the metadata's `scopes_supported`). */
export function scopesOffered(tools: readonly Scoped[]): Scope[] {
  const used = new Set(tools.map(scopeOf));
  return [READ_SCOPE, WRITE_SCOPE, AGENT_SCOPE].filter((s) => used.has(s as Scope)) as Scope[];
}

/**
 * The scope one JSON-RPC message needs, or null when any valid token may send it (initialize, ping,
 * tools/list, notifications, an unknown tool, which the server refuses by itself).
 */
function scopeOfMessage(message: unknown, byName: ReadonlyMap<string, Scope>): Scope | null {
  if (typeof message !== "object" || message === null) return null;
  const { method, params } = message as { method?: unknown; params?: { name?: unknown } };
  if (method === "tools/call") return typeof params?.name === "string" ? (byName.get(params.name) ?? null) : null;
  if (method === "resources/read") return READ_SCOPE;
  if (typeof method === "string" && method.startsWith("tasks/")) return AGENT_SCOPE;
  return null;
}

/** The scopes a request body (one message or a batch) needs that `granted` lacks. */
export function missingScopes(body: unknown, byName: ReadonlyMap<string, Scope>, granted: ReadonlySet<string>): Scope[] {
  const missing = new Set<Scope>();
  for (const message of Array.isArray(body) ? body : [body]) {
    const scope = scopeOfMessage(message, byName);
    if (scope !== null && !granted.has(scope)) missing.add(scope);
  }
  return [...missing];
}
