/**
 * Streamable HTTP at `/mcp` (docs/mcp-tools.md#streamable-http). Every request first has each header a gate
 * reads at most once (400), then passes the Host allowlist
 * (421, a missing Host too), the Origin allowlist (403) and, when configured, the bearer token
 * (401); only then does it reach the session's SDK transport. Rejection bodies are fixed phrases
 * that echo nothing. Off loopback a bearer token is required; sessions are capped and expire when
 * idle (http-sessions.ts).
 *
 * With revision 2026-07-28 served (`[server] protocol_revisions`, docs/protocol.md), a request whose
 * `MCP-Protocol-Version` header names a revision after the 2025 era goes to the SDK's per-request
 * entry instead: no session, one server per request, the header checks and their errors the SDK's.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { NodeStreamableHTTPServerTransport, toNodeHandler } from "@modelcontextprotocol/node";
import { createMcpHandler, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/server";
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
import { createMcpServer } from "./server.ts";
import { auditStartup, type McpRuntime } from "./startup.ts";
import { incomingMessageLimit } from "./transfer-limit.ts";

const TOKEN_KEY = "server.http.bearer_token_file";

/** Every header a gate or the session routing reads at most once (http-gate.ts `repeatsHeader`). */
const SINGLE_HEADERS = new Set(["host", "authorization", "origin", "mcp-session-id"]);

/** Before anything listens: off loopback the bearer token is required, so no bind is open by accident. */
function requireTokenOffLoopback(address: ListenAddress, token: string | null): void {
  if (isLoopback(address.host) || token !== null) return;
  throw new ConfigError(
    `${TOKEN_KEY}: must be set to serve HTTP on the non-loopback address ${formatHost(address.host, address.port)} (set a bearer token file, or bind 127.0.0.1)`,
  );
}

export async function serveHttp(rt: McpRuntime, listen: string): Promise<void> {
  const address = parseListen(listen, "--http");
  const { http: httpConfig, http_max_sessions, http_session_idle_seconds } = rt.deps.config.server;
  let token: string | null;
  try {
    token = httpConfig.bearer_token_file === "" ? null : readPrivateSecret(httpConfig.bearer_token_file, TOKEN_KEY);
    requireTokenOffLoopback(address, token);
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
  const modern = rt.deps.config.server.protocol_revisions.includes("2026-07-28")
    ? toNodeHandler(
        createMcpHandler(() => createMcpServer({ ...rt, signal: ending.signal, era: "modern" }), { legacy: "reject", maxRequestBodySize: bodyLimit }),
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
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    if (path === "/metrics") return metrics.serve(req, res);
    if (path !== "/mcp") return reply(res, 404, "not found");
    if (req.method !== "POST" && req.method !== "DELETE") return reply(res, 405, "method not allowed", { allow: "POST, DELETE" });
    const version = header(req, "mcp-protocol-version");
    if (modern && version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return modern(req, res);

    const sessionId = header(req, "mcp-session-id");
    if (sessionId !== undefined) {
      const session = sessions.get(sessionId);
      if (!session) return reply(res, 404, "unknown session");
      sessions.begin(session);
      res.once("close", () => sessions.end(session));
      return session.transport.handleRequest(req, res);
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
    await server.connect(transport);
    return transport.handleRequest(req, res);
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
