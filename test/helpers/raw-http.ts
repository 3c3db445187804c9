/**
 * `serverfs mcp --http` driven by hand, for what the SDK client hides: the exact headers, status codes
 * and bodies of either protocol era. A 2025 session is an `initialize` POST and the session id it
 * answers with; a 2026-07-28 request stands alone, with its `_meta` envelope and routing headers
 * (docs/protocol.md). An answer comes as JSON or as one SSE event; `answerOf` reads either.
 */
type Json = Record<string, unknown>;

/** The 2025 opening every raw session sends first (request id 1). */
export const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
};

export const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

/** POSTs `body` as JSON to `url`, accepting JSON or SSE, with `headers` on top. */
export function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(body),
  });
}

/** The JSON-RPC message of an answer, whether it came as JSON or on an SSE event's data line; `{}` when it held none (a 401, say). */
export async function answerOf(r: Response): Promise<Json> {
  const text = await r.text();
  const json = text.startsWith("{") ? text : /^data: (.*)$/m.exec(text)?.[1];
  return json === undefined ? {} : (JSON.parse(json) as Json);
}

/** A 2025 session opened at `url` with `headers` (a bearer token, say): the headers its later requests carry. */
export async function openSession(url: string, headers: Record<string, string> = {}): Promise<Record<string, string>> {
  const r = await postJson(url, INIT, headers);
  if (r.status !== 200) throw new Error(`initialize answered ${r.status}`);
  await r.text();
  const session = { ...headers, "mcp-session-id": r.headers.get("mcp-session-id")!, "mcp-protocol-version": "2025-06-18" };
  await (await postJson(url, { jsonrpc: "2.0", method: "notifications/initialized" }, session)).text();
  return session;
}

/** The per-request `_meta` envelope of revision 2026-07-28, declaring `capabilities`. */
export const modernMeta = (capabilities: Json = {}): Json => ({
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": capabilities,
});

export interface ModernMessage {
  method: string;
  params?: Json;
  /** A random one when absent. */
  id?: string | number;
}

export interface ModernAnswer {
  status: number;
  headers: Headers;
  /** The JSON-RPC message; `{}` when the answer held none. */
  body: Json;
}

/**
 * POSTs one 2026-07-28 request to `url`: its params get `_meta` = `modernMeta(capabilities)` unless they
 * carry their own; `Mcp-Method` is the method and `Mcp-Name` the tool of a `tools/call` or the task id
 * of a Tasks method; `headers` come on top (a bearer token, say).
 */
export async function postModern(
  url: string,
  message: ModernMessage,
  o: { capabilities?: Json; headers?: Record<string, string> } = {},
): Promise<ModernAnswer> {
  const params: Json = { _meta: modernMeta(o.capabilities), ...message.params };
  const name = message.method === "tools/call" ? params["name"] : message.method.startsWith("tasks/") ? params["taskId"] : undefined;
  const r = await postJson(
    url,
    { jsonrpc: "2.0", id: message.id ?? crypto.randomUUID(), method: message.method, params },
    {
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": message.method,
      ...(typeof name === "string" ? { "mcp-name": name } : {}),
      ...o.headers,
    },
  );
  return { status: r.status, headers: r.headers, body: await answerOf(r) };
}
