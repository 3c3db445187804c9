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
import { timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { NodeStreamableHTTPServerTransport, toNodeHandler } from "@modelcontextprotocol/node";
import { createMcpHandler, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/server";
import { ConfigError, expandHome } from "../../shared/config/load.ts";
import { isOwnerOnly, octal, ownUid, PRIVATE_FILE } from "../../shared/fs/modes.ts";
import { type RegularFile, readRegularFile } from "../../shared/fs/regular-file.ts";
import { UsageError } from "../args.ts";
import { FATAL_BOUND_MS, installFatalHandlers } from "../fatal-errors.ts";
import { type HttpSession, HttpSessions } from "./http-sessions.ts";
import { createMcpServer } from "./server.ts";
import { auditStartup, type McpRuntime } from "./startup.ts";
import { incomingMessageLimit } from "./transfer-limit.ts";

export interface ListenAddress {
  host: string;
  port: number;
}

/** `127.0.0.1:8000`, `[::1]:8000`, `localhost:8000`, `:8000` or `8000` (the last two bind 127.0.0.1). */
export function parseListen(value: string): ListenAddress {
  const port = (s: string) => {
    if (!/^\d{1,5}$/.test(s) || Number(s) > 65535) throw new UsageError("--http takes HOST:PORT");
    return Number(s);
  };
  if (/^\d+$/.test(value)) return { host: "127.0.0.1", port: port(value) };
  const v6 = /^\[([0-9A-Fa-f:.]+)\]:(\d+)$/.exec(value);
  if (v6) return { host: v6[1]!, port: port(v6[2]!) };
  const idx = value.lastIndexOf(":");
  if (idx < 0) throw new UsageError("--http takes HOST:PORT");
  const host = value.slice(0, idx) || "127.0.0.1";
  if (!/^[A-Za-z0-9.-]+$/.test(host)) throw new UsageError("--http takes HOST:PORT");
  return { host, port: port(value.slice(idx + 1)) };
}

const formatHost = (host: string, port: number) => (host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`);
/** `localhost`, `127.0.0.0/8` or `::1` (in any spelling); every other address reaches the network. */
function isLoopback(host: string): boolean {
  const h = host.toLowerCase();
  if (h === "localhost" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)) return true;
  if (!h.includes(":")) return false;
  try {
    return new URL(`http://[${h}]/`).hostname === "[::1]";
  } catch {
    return false;
  }
}

export function defaultAllowedHosts(host: string, port: number): string[] {
  const loopback = [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`];
  return isLoopback(host) ? loopback : [formatHost(host, port), ...loopback];
}

const TOKEN_KEY = "server.http.bearer_token_file";

/**
 * The token, from a regular file of this user that nobody else may read or change, as ssh asks of a
 * private key: anyone who can read it can call every tool, and anyone who can write it can choose it.
 */
function readBearerToken(file: string): string | null {
  if (file === "") return null;
  let read: RegularFile;
  try {
    read = readRegularFile(expandHome(file), (kind) => new ConfigError(`${TOKEN_KEY}: is ${kind}, not a regular file`));
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    throw new ConfigError(`${TOKEN_KEY}: cannot be read`);
  }
  const { uid, mode } = read.stat;
  if (uid !== ownUid()) throw new ConfigError(`${TOKEN_KEY}: is owned by uid ${uid}, not by this user (uid ${ownUid()}); it must be this user's own file`);
  if (!isOwnerOnly(mode)) {
    throw new ConfigError(
      `${TOKEN_KEY}: has mode ${octal(mode)}, so group or others can reach the token; it must be ${octal(PRIVATE_FILE)} or stricter (chmod 600 it)`,
    );
  }
  const token = read.text.replace(/\s+$/, "");
  if (token === "") throw new ConfigError(`${TOKEN_KEY}: is empty`);
  return token;
}

function tokenMatches(header: string | null, token: string): boolean {
  const expected = Buffer.from(`Bearer ${token}`);
  const given = Buffer.from(header ?? "");
  // compare in constant time over the expected length, whatever was sent
  const padded = Buffer.alloc(expected.length);
  given.copy(padded, 0, 0, Math.min(given.length, expected.length));
  return timingSafeEqual(padded, expected) && given.length === expected.length;
}

/** A fixed plain-text rejection; it never echoes a header. */
function reply(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  const body = `${text}\n`;
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": String(Buffer.byteLength(body)), ...headers });
  res.end(body);
}

/**
 * The headers a gate or the session routing reads. Node keeps the first of two `Host` or
 * `Authorization` headers and joins two `Origin` or `Mcp-Session-Id` headers, so a request that
 * repeats one would be judged on a value some other reader of it (a proxy, a log) does not see.
 */
const SINGLE_HEADERS = new Set(["host", "authorization", "origin", "mcp-session-id"]);

/** Whether a header of SINGLE_HEADERS occurs more than once (RFC 9112: two Host headers are a 400). */
function repeatsGateHeader(req: IncomingMessage): boolean {
  const seen = new Set<string>();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!.toLowerCase();
    if (!SINGLE_HEADERS.has(name)) continue;
    if (seen.has(name)) return true;
    seen.add(name);
  }
  return false;
}

const header = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/** Before anything listens: off loopback the bearer token is required, so no bind is open by accident. */
function requireTokenOffLoopback(address: ListenAddress, token: string | null): void {
  if (isLoopback(address.host) || token !== null) return;
  throw new ConfigError(
    `${TOKEN_KEY}: must be set to serve HTTP on the non-loopback address ${formatHost(address.host, address.port)} (set a bearer token file, or bind 127.0.0.1)`,
  );
}

export async function serveHttp(rt: McpRuntime, listen: string): Promise<void> {
  const address = parseListen(listen);
  const { http: httpConfig, http_max_sessions, http_session_idle_seconds } = rt.deps.config.server;
  let token: string | null;
  try {
    token = readBearerToken(httpConfig.bearer_token_file);
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
  let allowedHosts = new Set<string>();
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
    if (repeatsGateHeader(req)) return reply(res, 400, "ambiguous request");
    const host = header(req, "host")?.toLowerCase();
    if (!host || !allowedHosts.has(host)) return reply(res, 421, "misdirected request");
    const origin = header(req, "origin");
    if (origin !== undefined && !origins.has(origin)) return reply(res, 403, "origin not allowed");
    if (token !== null && !tokenMatches(header(req, "authorization") ?? null, token)) {
      return reply(res, 401, "unauthorized", { "www-authenticate": "Bearer" });
    }
    if (new URL(req.url ?? "/", "http://localhost").pathname !== "/mcp") return reply(res, 404, "not found");
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
