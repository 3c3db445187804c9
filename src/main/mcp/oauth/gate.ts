/**
 * The OAuth gate of the HTTP front (docs/mcp-tools.md#oauth), run after the Host and Origin checks:
 * it serves the Protected Resource Metadata (RFC 9728), takes the token from the `Authorization`
 * header only, validates it (verifier.ts), and refuses a request that needs a scope the token lacks
 * with 403 `insufficient_scope` naming the scopes needed (the MCP authorization spec's step-up), which
 * means reading the body of a POST here, before the SDK transport gets it already parsed.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AuditLog } from "../../../shared/audit.ts";
import type { ToolDef } from "../tool.ts";
import type { Identity } from "./identity.ts";
import { missingScopes, type Scope, scopeOf, scopesOffered } from "./scopes.ts";
import { type OAuthSettings, WELL_KNOWN } from "./settings.ts";
import { TokenRefused, TokenVerifier } from "./verifier.ts";

/** Longer than any token a real authorization server issues; a longer header is refused unparsed. */
export const MAX_TOKEN_BYTES = 8192;
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i;

/** A request the gate let through: whom its token names and, for a POST, its body already parsed. */
export interface Admitted {
  identity: Identity;
  body: unknown;
}

type Reply = (status: number, text: string, headers?: Record<string, string>) => void;

const quoted = (value: string) => `"${value.replace(/["\\]/g, "")}"`;

export class OAuthGate {
  private readonly verifier: TokenVerifier;
  private readonly byName: Map<string, Scope>;
  private readonly offered: Scope[];
  private readonly metadata: string;

  constructor(
    private readonly settings: OAuthSettings,
    tools: readonly ToolDef[],
    private readonly audit: AuditLog,
  ) {
    this.verifier = new TokenVerifier(settings);
    this.byName = new Map(tools.map((t) => [t.name, scopeOf(t)]));
    this.offered = scopesOffered(tools);
    this.metadata = JSON.stringify({
      resource: settings.resource,
      authorization_servers: [settings.issuer],
      scopes_supported: this.offered,
      bearer_methods_supported: ["header"],
      resource_name: "ServerFS",
    });
  }

  /** Whether `pathname` is the metadata document (also without the resource's path, for hosts that ask there). */
  isMetadataPath(pathname: string): boolean {
    return pathname === this.settings.metadataPath || pathname === WELL_KNOWN;
  }

  serveMetadata(req: IncomingMessage, res: ServerResponse, reply: Reply): void {
    if (req.method !== "GET") {
      reply(405, "method not allowed", { allow: "GET" });
      return;
    }
    res.writeHead(200, { "content-type": "application/json", "content-length": String(Buffer.byteLength(this.metadata)), "cache-control": "max-age=300" });
    res.end(this.metadata);
  }

  private challenge(fields: Record<string, string>): Record<string, string> {
    const params = { ...fields, resource_metadata: this.settings.metadataUrl };
    return {
      "www-authenticate": `Bearer ${Object.entries(params)
        .map(([k, v]) => `${k}=${quoted(v)}`)
        .join(", ")}`,
    };
  }

  private refuse(reply: Reply, reason: string, status: number, text: string, fields: Record<string, string>): null {
    this.audit.warn("http_auth_refused", { reason, status });
    reply(status, text, this.challenge(fields));
    return null;
  }

  /** The request's identity and parsed body, or null once it has been answered. */
  async admit(req: IncomingMessage, url: URL, authorization: string | undefined, bodyLimit: number, reply: Reply): Promise<Admitted | null> {
    // RFC 6750 §2.3's query form leaks tokens into logs and history; the MCP spec forbids it.
    if (url.searchParams.has("access_token")) return this.refuse(reply, "token_in_query", 400, "token in query", { error: "invalid_request" });
    const scope = this.offered.join(" ");
    if (authorization === undefined) return this.refuse(reply, "no_token", 401, "unauthorized", { scope });
    if (Buffer.byteLength(authorization) > MAX_TOKEN_BYTES + 16) return this.refuse(reply, "oversized", 401, "unauthorized", { error: "invalid_token" });
    const token = BEARER.exec(authorization)?.[1];
    if (!token) return this.refuse(reply, "not_bearer", 401, "unauthorized", { error: "invalid_token" });
    let identity: Identity;
    try {
      identity = await this.verifier.verify(token);
    } catch (e) {
      const refused = e instanceof TokenRefused ? e : new TokenRefused("unavailable", "jwks_unavailable");
      if (refused.kind === "unavailable") {
        this.audit.error("http_auth_refused", { reason: refused.reason, status: 503 });
        reply(503, "authorization server unavailable", { "retry-after": "5" });
        return null;
      }
      return this.refuse(reply, refused.reason, 401, "unauthorized", { error: "invalid_token" });
    }
    if (req.method !== "POST") return { identity, body: undefined };
    const body = await readJson(req, bodyLimit, reply);
    if (body === NOT_READ) return null;
    const missing = missingScopes(body, this.byName, identity.scopes);
    if (missing.length > 0) {
      return this.refuse(reply, "insufficient_scope", 403, "insufficient scope", { error: "insufficient_scope", scope: missing.join(" ") });
    }
    return { identity, body };
  }
}

const NOT_READ = Symbol("not read");

/** A JSON-RPC error answer as the SDK transport gives it for the same faults. */
function jsonRpcError(reply: Reply, status: number, code: number, message: string): typeof NOT_READ {
  reply(status, JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }), { "content-type": "application/json" });
  return NOT_READ;
}

/**
 * The body's bytes, or null past `limit` (the rest is then drained unread). Events, not `for await`:
 * leaving an async iteration early destroys the request stream, in Node its socket too, while the 413
 * is still being written.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received <= limit) return void chunks.push(chunk);
      req.off("data", onData);
      req.resume();
      resolve(null);
    };
    req.on("data", onData);
    req.once("end", () => resolve(Buffer.concat(chunks)));
    req.once("error", reject);
  });
}

/** The POST body parsed, within `limit` bytes, answered as the SDK transport would when it is too large or not JSON. */
async function readJson(req: IncomingMessage, limit: number, reply: Reply): Promise<unknown> {
  const tooLarge = () => jsonRpcError(reply, 413, -32000, `Payload Too Large: Request body must not exceed ${limit} bytes`);
  if (Number(req.headers["content-length"]) > limit) return tooLarge();
  const bytes = await readBody(req, limit);
  if (bytes === null) return tooLarge();
  try {
    return JSON.parse(bytes.toString("utf8"));
  } catch {
    return jsonRpcError(reply, 400, -32700, "Parse error: Invalid JSON");
  }
}
