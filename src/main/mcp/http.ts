/**
 * Streamable HTTP at `/mcp` (docs/mcp-tools.md#streamable-http). Every request first has each header a gate
 * reads at most once (400), then passes the Host allowlist
 * (421, a missing Host too), the Origin allowlist (403) and, when configured, the bearer token
 * (401) or the OAuth gate (oauth/gate.ts: 401, 403 insufficient_scope); only then does it reach the
 * session's SDK transport. Rejection bodies are fixed phrases that echo nothing. Off loopback a bearer
 * token or OAuth is required; sessions are capped and expire when idle (http-sessions.ts).
 *
 * With revision 2026-07-28 served (`[server] protocol_revisions`, docs/protocol.md), a request whose
 * `MCP-Protocol-Version` header names a revision after the 2025 era goes to the SDK's per-request
 * entry instead: no session, one server per request, the header checks and their errors the SDK's.
 * Every gate, OAuth's too, stands before both eras alike.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { NodeStreamableHTTPServerTransport, toNodeHandler } from "@modelcontextprotocol/node";
import { type AuthInfo, createMcpHandler, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/server";
import { ConfigError } from "../../shared/config/load.ts";
import { FATAL_BOUND_MS, installFatalHandlers } from "../fatal-errors.ts";
import {
  defaultAllowedHosts,
  formatHost,
  header,
  isLoopback,
  type ListenAddress,
  parseListen,
  readPrivateSecret,
  repeatsHeader,
  reply,
  secretMatches,
} from "../http-gate.ts";
import { type HttpSession, HttpSessions } from "./http-sessions.ts";
import { McpMetrics } from "./metrics.ts";
import { OAuthGate } from "./oauth/gate.ts";
import { ownerOf, toAuthInfo } from "./oauth/identity.ts";
import { oauthSettings } from "./oauth/settings.ts";
import { createMcpServer } from "./server.ts";
import { auditStartup, type McpRuntime } from "./startup.ts";
import { incomingMessageLimit } from "./transfer-limit.ts";

const TOKEN_KEY = "server.http.bearer_token_file";

/** Every header a gate or the session routing reads at most once (http-gate.ts `repeatsHeader`). */
const SINGLE_HEADERS = new Set(["host", "authorization", "origin", "mcp-session-id"]);

/** Before anything listens: off loopback a bearer token or OAuth is required, so no bind is open by accident. */
function requireTokenOffLoopback(address: ListenAddress, guarded: boolean): void {
  if (isLoopback(address.host) || guarded) return;
  throw new ConfigError(
    `${TOKEN_KEY}: must be set to serve HTTP on the non-loopback address ${formatHost(address.host, address.port)} (set a bearer token file or [server.http.oauth], or bind 127.0.0.1)`,
  );
}

export async function serveHttp(rt: McpRuntime, listen: string): Promise<void> {
  const address = parseListen(listen, "--http");
  const { http: httpConfig, http_max_sessions, http_session_idle_seconds } = rt.deps.config.server;
  let token: string | null;
  let oauth: OAuthGate | null;
  try {
    const settings = oauthSettings(httpConfig);
    token = httpConfig.bearer_token_file === "" ? null : readPrivateSecret(httpConfig.bearer_token_file, TOKEN_KEY);
    oauth = settings && new OAuthGate(settings, rt.tools, rt.deps.audit);
    requireTokenOffLoopback(address, token !== null || oauth !== null);
  } catch (e) {
    if (e instanceof ConfigError) rt.deps.audit.error("startup_failed", { reason: e.message });
    throw e;
  }
  const origins = new Set(httpConfig.allowed_origins);
  const bodyLimit = incomingMessageLimit(rt.deps.config);
  const ending = new AbortController();
  const sessions = new HttpSessions<NodeStreamableHTTPServerTransport>(http_max_sessions, http_session_idle_seconds * 1000, (reason) =>
    rt.deps.audit.info("http_session_closed", { reason, sessions: sessions.size }),
  );
  const metrics = new McpMetrics(rt.deps.audit, () => sessions.size);
  let allowedHosts = new Set<string>();
  const owners = new WeakMap<NodeStreamableHTTPServerTransport, string>();
  const modern = rt.deps.config.server.protocol_revisions.includes("2026-07-28")
    ? toNodeHandler(
        createMcpHandler(() => createMcpServer({ ...rt, signal: ending.signal, era: "modern", stateless: true }), {
          legacy: "reject",
          maxRequestBodySize: bodyLimit,
        }),
        { maxRequestBodySize: bodyLimit },
      )
    : null;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (repeatsHeader(req, SINGLE_HEADERS)) return reply(res, 400, "ambiguous request");
    const host = header(req, "host")?.toLowerCase();
    if (!host || !allowedHosts.has(host)) return reply(res, 421, "misdirected request");
    const origin = header(req, "origin");
    if (origin !== undefined && !origins.has(origin)) return reply(res, 403, "origin not allowed");
    if (token !== null && !secretMatches(header(req, "authorization"), `Bearer ${token}`)) {
      return reply(res, 401, "unauthorized", { "www-authenticate": "Bearer" });
    }
    const url = new URL(req.url ?? "/", "http://localhost");
    if (oauth?.isMetadataPath(url.pathname)) return oauth.serveMetadata(req, res, (...a) => reply(res, ...a));
    if (url.pathname === "/metrics") {
      // behind the same gates as /mcp: with OAuth, any valid token for this resource (a scraper's own client)
      if (oauth && !(await oauth.admit(req, url, header(req, "authorization"), bodyLimit, (...a) => reply(res, ...a)))) return;
      return metrics.serve(req, res);
    }
    if (url.pathname !== "/mcp") return reply(res, 404, "not found");
    if (req.method !== "POST" && req.method !== "DELETE") return reply(res, 405, "method not allowed", { allow: "POST, DELETE" });
    let parsedBody: unknown;
    let owner: string | null = null;
    if (oauth) {
      const admitted = await oauth.admit(req, url, header(req, "authorization"), bodyLimit, (...a) => reply(res, ...a));
      if (!admitted) return;
      // both SDK entries hand `req.auth` to the handlers as `ctx.http.authInfo` (tools/list filtering, audit identity)
      (req as IncomingMessage & { auth?: AuthInfo }).auth = toAuthInfo(admitted.identity);
      // the gate has read the body; both entries take it parsed instead of reading the stream again
      parsedBody = admitted.body;
      owner = ownerOf(admitted.identity);
    }
    const version = header(req, "mcp-protocol-version");
    if (modern && version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return modern(req, res, parsedBody);

    const sessionId = header(req, "mcp-session-id");
    if (sessionId !== undefined) {
      const session = sessions.get(sessionId);
      // an OAuth session answers only to the identity that opened it, as if unknown to anyone else
      if (!session || (owner !== null && owners.get(session.transport) !== owner)) return reply(res, 404, "unknown session");
      sessions.begin(session);
      res.once("close", () => sessions.end(session));
      return session.transport.handleRequest(req, res, parsedBody);
    }
    if (req.method === "DELETE") return reply(res, 400, "missing session");
    const room = sessions.makeRoom();
    if (!room) return reply(res, 503, "too many sessions", { "retry-after": "1" });
    let session: HttpSession<NodeStreamableHTTPServerTransport> | undefined;
    const server = createMcpServer({ ...rt, signal: ending.signal, era: "legacy" });
    const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      maxRequestBodySize: bodyLimit,
      // the v2 line's SSE keep-alive comments are new bytes on the 2025 wire (docs/decisions.md#mcp-sdk)
      keepAliveMs: 0,
      onsessioninitialized: (id) => {
        room();
        session = sessions.add(id, transport, () => server.close());
      },
      onsessionclosed: (id) => sessions.forget(id),
    });
    // A request that did not initialize a session leaves nothing behind.
    res.once("close", () => {
      room();
      if (session) sessions.end(session);
      else void server.close().catch(() => {});
    });
    if (owner !== null) owners.set(transport, owner);
    await server.connect(transport);
    return transport.handleRequest(req, res, parsedBody);
  }

  // Node's server, not Bun.serve: Bun.serve answers a request without Host with a bare 400 before
  // any handler runs, and the contract wants 421 for it like for any other Host.
  const server = createServer({ requireHostHeader: false }, (req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) reply(res, 500, "internal error");
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (e) => reject(e));
    server.listen(address.port, address.host, () => resolve());
  });
  const bound = server.address();
  const port = typeof bound === "object" && bound !== null ? bound.port : address.port;
  const configured = (httpConfig.allowed_hosts ?? []).map((h) => h.toLowerCase());
  allowedHosts = new Set(configured.length > 0 ? configured : defaultAllowedHosts(address.host, port));
  auditStartup(rt, "http", formatHost(address.host, port));
  // a person at a terminal gets a line to read; a service manager or a log pipe keeps JSON lines only
  if (process.stderr.isTTY) process.stderr.write(`serverfs mcp: listening on http://${formatHost(address.host, port)}/mcp (Ctrl-C stops it)\n`);
  if (!isLoopback(address.host)) rt.deps.audit.warn("http_not_loopback", { listen: formatHost(address.host, port) });

  const release = () => {
    ending.abort();
    sessions.closeAll();
    server.closeAllConnections();
    server.close();
  };
  const stop = () => {
    release();
    process.exit(0);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  installFatalHandlers({ audit: rt.deps.audit, shutdown: release, boundMs: FATAL_BOUND_MS });
}
