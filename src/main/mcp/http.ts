/**
 * Streamable HTTP at `/mcp` (mcp-surface.md §2.2). Every request first passes the Host allowlist
 * (421), the Origin allowlist (403) and, when configured, the bearer token (401); only then does
 * it reach the session's SDK transport. Rejection bodies are fixed phrases that echo nothing.
 */
import { timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { ConfigError, expandHome } from "../../shared/config/load.ts";
import { UsageError } from "../args.ts";
import { createMcpServer } from "./server.ts";
import { auditStartup, type McpRuntime } from "./startup.ts";

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
const isLoopback = (host: string) => host === "localhost" || host === "::1" || host.startsWith("127.");

export function defaultAllowedHosts(host: string, port: number): string[] {
  const loopback = [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`];
  return isLoopback(host) ? loopback : [formatHost(host, port), ...loopback];
}

function readBearerToken(file: string): string | null {
  if (file === "") return null;
  let token: string;
  try {
    token = readFileSync(expandHome(file), "utf8").replace(/\s+$/, "");
  } catch {
    throw new ConfigError("server.http.bearer_token_file: cannot be read");
  }
  if (token === "") throw new ConfigError("server.http.bearer_token_file: is empty");
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

const plain = (status: number, text: string, headers: Record<string, string> = {}) =>
  new Response(`${text}\n`, { status, headers: { "content-type": "text/plain; charset=utf-8", ...headers } });

export async function serveHttp(rt: McpRuntime, listen: string): Promise<void> {
  const address = parseListen(listen);
  const httpConfig = rt.deps.config.server.http;
  const token = readBearerToken(httpConfig.bearer_token_file);
  const origins = new Set(httpConfig.allowed_origins);
  const ending = new AbortController();
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();

  const bun = Bun.serve({
    hostname: address.host,
    port: address.port,
    idleTimeout: 60,
    fetch: async (req) => {
      const host = req.headers.get("host")?.toLowerCase();
      if (!host || !allowedHosts.has(host)) return plain(421, "misdirected request");
      const origin = req.headers.get("origin");
      if (origin !== null && !origins.has(origin)) return plain(403, "origin not allowed");
      if (token !== null && !tokenMatches(req.headers.get("authorization"), token)) {
        return plain(401, "unauthorized", { "www-authenticate": "Bearer" });
      }
      if (new URL(req.url).pathname !== "/mcp") return plain(404, "not found");
      if (req.method === "GET") return plain(405, "method not allowed", { allow: "POST, DELETE" });
      if (req.method !== "POST" && req.method !== "DELETE") return plain(405, "method not allowed", { allow: "POST, DELETE" });

      const sessionId = req.headers.get("mcp-session-id");
      if (sessionId !== null) {
        const transport = sessions.get(sessionId);
        if (!transport) return plain(404, "unknown session");
        return transport.handleRequest(req);
      }
      if (req.method === "DELETE") return plain(400, "missing session");
      const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, transport);
        },
        onsessionclosed: (id) => {
          sessions.delete(id);
        },
      });
      const server = createMcpServer({ ...rt, signal: ending.signal });
      await server.connect(transport);
      return transport.handleRequest(req);
    },
  });

  const port = bun.port ?? address.port;
  const configured = (httpConfig.allowed_hosts ?? []).map((h) => h.toLowerCase());
  const allowedHosts = new Set(configured.length > 0 ? configured : defaultAllowedHosts(address.host, port));
  auditStartup(rt, "http", formatHost(address.host, port));

  const stop = () => {
    ending.abort();
    bun.stop(true);
    process.exit(0);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}
