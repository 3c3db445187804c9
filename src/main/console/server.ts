/**
 * The console's HTTP server (docs/console.md): loopback only. Every request passes, in order: headers a
 * gate reads at most once (400), the Host allowlist (421), the Origin allowlist — the console's own
 * origins (403) —, then the token: the access token from the cookie, `?token=` on `GET /` (which sets
 * the cookie and redirects to a clean URL), or `Authorization: Bearer`; `GET /metrics` also takes the
 * read-only metrics token, which opens nothing else (401). A POST then needs `X-CSRF-Token` (403) and a JSON body. Every answer carries a
 * strict Content-Security-Policy (no inline script or style), `nosniff`, `no-referrer` and
 * `frame-ancestors 'none'`. Offers `startConsoleServer`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { isServerFsError, RelayedError } from "../../shared/errors.ts";
import { defaultAllowedHosts, formatHost, header, type ListenAddress, repeatsHeader, reply, secretMatches } from "../http-gate.ts";
import { replyExposition } from "../prometheus-text.ts";
import type { ConsoleApi } from "./api.ts";
import { ASSETS } from "./assets.ts";
import { BadRequest, findRoute, statusOf } from "./routes.ts";
import { bearerValue, COOKIE, type ConsoleSecrets, cookieValue } from "./secrets.ts";

export interface ConsoleServer {
  /** `http://HOST:PORT` as bound (port 0 resolved). */
  origin: string;
  close(): void;
}

export interface ConsoleHandlers {
  api: ConsoleApi;
  secrets: ConsoleSecrets;
  /** `GET /metrics`: the Prometheus text exposition. */
  metrics(): Promise<string>;
}

const SINGLE_HEADERS = new Set(["host", "origin", "authorization", "cookie", "x-csrf-token"]);
/** A decision's body is a few ids and answers. */
const MAX_BODY_BYTES = 65_536;

const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cache-control": "no-store",
};

function json(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": String(Buffer.byteLength(body)), ...headers });
  res.end(body);
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  if (!(header(req, "content-type") ?? "").toLowerCase().startsWith("application/json")) throw new BadRequest("the body must be application/json");
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new BadRequest("the body is too large");
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
  } catch {
    throw new BadRequest("the body is not JSON");
  }
}

/**
 * A failure as JSON: a refused body is INVALID_REQUEST, a coded error keeps its code (a relayed one as
 * the Bridge sent it); anything else is a bare 500 that says nothing more.
 */
function failure(res: ServerResponse, e: unknown): void {
  if (e instanceof BadRequest) json(res, 400, { error: { code: "INVALID_REQUEST", message: e.message } });
  else if (isServerFsError(e)) json(res, statusOf(e), { error: { code: e instanceof RelayedError ? e.relayedCode : e.code, message: e.message } });
  else reply(res, 500, "internal error");
}

export async function startConsoleServer(address: ListenAddress, handlers: ConsoleHandlers): Promise<ConsoleServer> {
  const { api, secrets } = handlers;
  let allowedHosts = new Set<string>();
  let origins = new Set<string>();

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    for (const [k, val] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, val);
    if (repeatsHeader(req, SINGLE_HEADERS)) return reply(res, 400, "ambiguous request");
    const host = header(req, "host")?.toLowerCase();
    if (!host || !allowedHosts.has(host)) return reply(res, 421, "misdirected request");
    const origin = header(req, "origin");
    if (origin !== undefined && !origins.has(origin.toLowerCase())) return reply(res, 403, "origin not allowed");
    const url = new URL(req.url ?? "/", "http://console.invalid");
    const method = req.method ?? "GET";

    const cookie = cookieValue(req);
    const bearer = bearerValue(req);
    const holdsToken = secretMatches(cookie, secrets.token) || secretMatches(bearer, secrets.token);

    if (url.pathname === "/metrics") {
      const metricsOk = holdsToken || (secrets.metricsToken !== null && secretMatches(bearer, secrets.metricsToken));
      if (!metricsOk) return reply(res, 401, "unauthorized", { "www-authenticate": "Bearer" });
      if (method !== "GET") return reply(res, 405, "method not allowed", { allow: "GET" });
      return replyExposition(res, await handlers.metrics());
    }

    // the first URL carries the token once: it becomes the cookie, and the address bar loses it
    const given = url.searchParams.get("token");
    if (url.pathname === "/" && method === "GET" && given !== null) {
      if (!secretMatches(given, secrets.token)) return reply(res, 401, "unauthorized: open the URL `serverfs console` printed");
      return reply(res, 303, "see /", {
        location: "/",
        "set-cookie": `${COOKIE}=${secrets.token}; HttpOnly; SameSite=Strict; Path=/`,
      });
    }
    if (!holdsToken) return reply(res, 401, "unauthorized: open the URL `serverfs console` printed");

    const asset = ASSETS[url.pathname === "/" ? "/index.html" : url.pathname];
    if (asset) {
      if (method !== "GET") return reply(res, 405, "method not allowed", { allow: "GET" });
      res.writeHead(200, { "content-type": asset.type, "content-length": String(Buffer.byteLength(asset.body)) });
      return void res.end(asset.body);
    }
    if (url.pathname === "/api/session") return json(res, 200, { csrf_token: secrets.csrf });

    const found = findRoute(url.pathname);
    if (!found) return reply(res, 404, "not found");
    if (method !== found.route.method) return reply(res, 405, "method not allowed", { allow: found.route.method });
    let body: unknown = null;
    if (method === "POST") {
      if (!secretMatches(header(req, "x-csrf-token"), secrets.csrf)) return reply(res, 403, "missing or wrong CSRF token");
      body = await readBody(req);
    }
    json(res, 200, await found.route.handle(api, { taskId: found.taskId, query: url.searchParams, body }));
  }

  const server: Server = createServer({ requireHostHeader: false }, (req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) failure(res, e);
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(address.port, address.host, () => resolve());
  });
  const bound = server.address();
  const port = typeof bound === "object" && bound !== null ? bound.port : address.port;
  allowedHosts = new Set(defaultAllowedHosts(address.host, port));
  origins = new Set([...allowedHosts].map((h) => `http://${h}`));
  return {
    origin: `http://${formatHost(address.host, port)}`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
