/**
 * ServerFS as an OAuth 2.1 resource server (docs/mcp-tools.md#oauth), against a real authorization
 * server on loopback (oidc-provider, test/helpers/oauth-server.ts): the Protected Resource Metadata,
 * the 401 that names it, tokens by client credentials, scopes as rights with the 403 step-up, the
 * identity in the audit log, and every attack of the issue as its own refusal. The server also serves
 * revision 2026-07-28 (docs/protocol.md), whose per-request path stands behind the same gate.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type OAuthClientProvider, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { OAuthClientInformationMixed, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { decodeJwt, exportSPKI, generateKeyPair, importJWK, SignJWT } from "jose";
import { freePort, type HttpServer, rawRequest, spawnHttpServer, stopHttpServers } from "../helpers/http-server.ts";
import { parseAudit } from "../helpers/mcp-client.ts";
import { ALL_SCOPES, type AuthServer, authorizeInBrowser, startAuthServer } from "../helpers/oauth-server.ts";
import { runCli } from "../helpers/process.ts";
import { answerOf, bearer, INIT, type ModernMessage, openSession, postJson, postModern } from "../helpers/raw-http.ts";
import type { Table } from "../helpers/toml.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

let dir: TempDir;
let as: AuthServer;
let server: HttpServer;
let resource: string;
let workdirs: Table[];

const post = (body: unknown, headers: Record<string, string> = {}, path = "/mcp") => postJson(`http://127.0.0.1:${server.port}${path}`, body, headers);

/** A session opened with `token`: the headers its requests carry. */
const open = (token: string) => openSession(`http://127.0.0.1:${server.port}/mcp`, bearer(token));

const call = (id: number, name: string, args: Record<string, unknown>) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });

beforeAll(async () => {
  dir = tempDir();
  dir.file("ws/hello.txt", "hello\n");
  workdirs = [{ slot: 1, alias: "ws", path: `${dir.path}/ws`, read_only: false }];
  as = await startAuthServer();
  const port = await freePort();
  resource = `http://127.0.0.1:${port}/mcp`;
  const config = writeConfig(dir.path, {
    server: { protocol_revisions: ["2025-11-25", "2026-07-28"], http: { oauth: { issuer: as.issuer, resource } } },
    workdirs,
  });
  server = await spawnHttpServer(config, `127.0.0.1:${port}`);
});

afterAll(async () => {
  stopHttpServers();
  await as?.close();
  dir?.remove();
});

describe("the resource server's metadata and challenge", () => {
  test("GET /.well-known/oauth-protected-resource/mcp (and the bare form) serves RFC 9728 metadata naming the issuer and the scopes", async () => {
    for (const path of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]) {
      const r = await fetch(`http://127.0.0.1:${server.port}${path}`);
      expect(r.status).toBe(200);
      expect(await r.json()).toEqual({
        resource,
        authorization_servers: [as.issuer],
        scopes_supported: ["serverfs:read", "serverfs:write"],
        bearer_methods_supported: ["header"],
        resource_name: "ServerFS",
      });
    }
  });

  test("a request without a token gets 401 with WWW-Authenticate naming the metadata URL of the configured resource and the scopes", async () => {
    const r = await post(INIT);
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toBe(
      `Bearer scope="serverfs:read serverfs:write", resource_metadata="http://127.0.0.1:${server.port}/.well-known/oauth-protected-resource/mcp"`,
    );
  });
});

describe("tokens from the authorization server", () => {
  test("a client-credentials token for this resource opens a session and calls a tool; the audit line names sub and client, never the token", async () => {
    const token = await as.clientCredentials(resource, ALL_SCOPES);
    const session = await open(token);
    const r = await post(call(2, "read_text_file", { workdir: "ws", path: "hello.txt" }), session);
    expect(r.status).toBe(200);
    const result = (await answerOf(r))["result"] as { isError?: boolean; structuredContent: { content: string } };
    expect(result.isError).toBeUndefined();
    expect(result.structuredContent.content).toBe("hello\n");
    const records = await server.waitFor("tool_call");
    expect(records.at(-1)).toMatchObject({ tool: "read_text_file", success: true, sub: "svc", client_id: "svc" });
    expect(server.stderr()).not.toContain(token);
    expect(server.stderr()).not.toContain(token.split(".")[2]!);
  });

  test("GET /metrics takes a valid token for this resource like /mcp: none is 401, a forged one 401, a scraper's client-credentials token 200", async () => {
    const metrics = (headers: Record<string, string> = {}) =>
      fetch(`http://127.0.0.1:${server.port}/metrics`, { headers: { host: `127.0.0.1:${server.port}`, ...headers } });
    expect((await metrics()).status).toBe(401);
    expect((await metrics(bearer("not.a.token"))).status).toBe(401);
    const scraped = await metrics(bearer(await as.clientCredentials(resource, ALL_SCOPES)));
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain("# TYPE serverfs_mcp_tool_calls_total counter");
  });

  test("scopes are rights: a read-only token lists only the read tools, and a write call gets 403 insufficient_scope naming serverfs:write", async () => {
    const token = await as.clientCredentials(resource, "serverfs:read");
    const session = await open(token);
    const listed = (await answerOf(await post({ jsonrpc: "2.0", id: 3, method: "tools/list" }, session)))["result"] as { tools: { name: string }[] };
    const names = listed.tools.map((t) => t.name);
    expect(names).toContain("read_text_file");
    expect(names).not.toContain("create_text_file");
    expect(names).not.toContain("delete_file");

    const r = await post(call(4, "create_text_file", { workdir: "ws", path: "new.txt", content: "x" }), session);
    expect(r.status).toBe(403);
    expect(r.headers.get("www-authenticate")).toBe(
      `Bearer error="insufficient_scope", scope="serverfs:write", resource_metadata="http://127.0.0.1:${server.port}/.well-known/oauth-protected-resource/mcp"`,
    );
    // a batch is judged by its neediest message
    const batch = await post(
      [call(5, "read_text_file", { workdir: "ws", path: "hello.txt" }), call(6, "delete_file", { workdir: "ws", path: "hello.txt" })],
      session,
    );
    expect(batch.status).toBe(403);
    await batch.text();
    expect(await Bun.file(`${dir.path}/ws/hello.txt`).text()).toBe("hello\n");

    const writer = await open(await as.clientCredentials(resource, "serverfs:write"));
    const write = await post(call(7, "create_text_file", { workdir: "ws", path: "new.txt", content: "x" }), writer);
    expect(write.status).toBe(200);
    await write.text();
    expect(await Bun.file(`${dir.path}/ws/new.txt`).text()).toBe("x");
  });
});

describe("a 2026-07-28 request, served without a session, behind the same gate", () => {
  const modern = (token: string | null, message: ModernMessage) =>
    postModern(`http://127.0.0.1:${server.port}/mcp`, message, { headers: token === null ? {} : bearer(token) });

  test("no token is 401; a read-only token lists only the read tools, reads with its identity audited, and a write call or a Tasks extension method gets the 403 step-up before anything runs", async () => {
    const list = { id: 1, method: "tools/list", params: {} };
    expect((await modern(null, list)).status).toBe(401);

    const token = await as.clientCredentials(resource, "serverfs:read");
    const listed = await modern(token, list);
    expect(listed.status).toBe(200);
    const names = (listed.body["result"] as { tools: { name: string }[] }).tools.map((t) => t.name);
    expect(names).toContain("read_text_file");
    expect(names).not.toContain("create_text_file");

    const before = parseAudit(server.stderr()).filter((r) => r["event"] === "tool_call").length;
    const read = await modern(token, call(2, "read_text_file", { workdir: "ws", path: "hello.txt" }));
    expect(read.status).toBe(200);
    const result = read.body["result"] as { resultType: string; structuredContent: { content: string } };
    expect(result).toMatchObject({ resultType: "complete", structuredContent: { content: "hello\n" } });
    const records = await server.waitFor("tool_call", before + 1);
    expect(records.at(-1)).toMatchObject({ tool: "read_text_file", success: true, sub: "svc", client_id: "svc" });

    const write = await modern(token, call(3, "create_text_file", { workdir: "ws", path: "modern.txt", content: "x" }));
    expect(write.status).toBe(403);
    expect(write.headers.get("www-authenticate")).toBe(
      `Bearer error="insufficient_scope", scope="serverfs:write", resource_metadata="http://127.0.0.1:${server.port}/.well-known/oauth-protected-resource/mcp"`,
    );
    expect(await Bun.file(`${dir.path}/ws/modern.txt`).exists()).toBe(false);
    // the Tasks extension's methods are the Agent right, on this path too
    const taskId = `agt_${"0".repeat(24)}`;
    const get = await modern(token, { id: 5, method: "tasks/get", params: { taskId } });
    expect(get.status).toBe(403);
    expect(get.headers.get("www-authenticate")).toStartWith('Bearer error="insufficient_scope", scope="serverfs:agent"');

    const writer = await as.clientCredentials(resource, "serverfs:write");
    const written = await modern(writer, call(4, "create_text_file", { workdir: "ws", path: "modern.txt", content: "x" }));
    expect(written.status).toBe(200);
    expect((written.body["result"] as { isError?: boolean }).isError).toBeUndefined();
    expect(await Bun.file(`${dir.path}/ws/modern.txt`).text()).toBe("x");
  });
});

describe("bodies the gate reads", () => {
  test("a chunked body past the limit gets the SDK's 413, one that is not JSON its parse error", async () => {
    const token = await as.clientCredentials(resource, ALL_SCOPES);
    // past the 10 MiB bound of a server without binary uploads (transfer-limit.ts)
    const big = new Uint8Array(11 * 1024 * 1024).fill(32);
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < big.length; i += 1 << 20) controller.enqueue(big.subarray(i, i + (1 << 20)));
        controller.close();
      },
    });
    const r = await fetch(`http://127.0.0.1:${server.port}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...bearer(token) },
      body: chunked,
    });
    expect(r.status).toBe(413);
    expect(((await r.json()) as { error: { code: number } }).error.code).toBe(-32000);
    const bad = await fetch(`http://127.0.0.1:${server.port}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...bearer(token) },
      body: "{not json",
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: number } }).error.code).toBe(-32700);
  });
});

describe("sessions", () => {
  test("a session answers only to the user and client that opened it: another valid token gets 404 for its id, a fresh token of the same identity is served", async () => {
    const session = await open(await as.clientCredentials(resource, ALL_SCOPES));
    const list = { jsonrpc: "2.0", id: 9, method: "tools/list" };
    const other = await post(list, { ...session, ...bearer(await as.forge({ aud: resource, sub: "mallory", client_id: "other" })) });
    expect(other.status).toBe(404);
    await other.text();
    const renewed = await post(list, { ...session, ...bearer(await as.clientCredentials(resource, "serverfs:read")) });
    expect(renewed.status).toBe(200);
    await renewed.text();
  });
});

describe("attacks on the token are refused", () => {
  const refused = async (token: string) => {
    const r = await post(INIT, bearer(token));
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toStartWith('Bearer error="invalid_token"');
    await r.text();
  };

  test("wrong audience, wrong issuer, expired, not yet valid — each signed with the issuer's real key", async () => {
    const now = Math.floor(Date.now() / 1000);
    expect((await post(INIT, bearer(await as.forge({ aud: resource })))).status).toBe(200);
    await refused(await as.forge({ aud: "https://other.example/mcp" }));
    await refused(await as.forge({ aud: resource, iss: "https://evil.example" }));
    await refused(await as.forge({ aud: resource, iat: now - 7200, exp: now - 3600 }));
    await refused(await as.forge({ aud: resource, nbf: now + 3600 }));
    await refused(await as.forge({ aud: resource, exp: undefined }));
    const reasons = parseAudit(server.stderr())
      .filter((e) => e["event"] === "http_auth_refused")
      .map((e) => e["reason"]);
    expect(reasons).toEqual(expect.arrayContaining(["claim_aud", "claim_iss", "expired", "claim_nbf", "claim_exp"]));
  });

  test("alg none, and HS256 signed with the issuer's public key as the secret", async () => {
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: as.issuer, aud: resource, sub: "svc", scope: ALL_SCOPES, exp: now + 600 };
    await refused(`${b64({ alg: "none", typ: "JWT" })}.${b64(claims)}.`);
    for (const secret of [JSON.stringify(as.publicJwk), await exportSPKI((await importJWK(as.publicJwk, "ES256", { extractable: true })) as CryptoKey)]) {
      const hs = await new SignJWT(claims).setProtectedHeader({ alg: "HS256", kid: as.publicJwk.kid! }).sign(new TextEncoder().encode(secret));
      await refused(hs);
    }
  });

  test("a flood of tokens with unknown kids: every one refused, the JWKS refetched at most once", async () => {
    const { privateKey } = await generateKeyPair("ES256");
    const before = as.jwksFetches();
    for (let i = 0; i < 20; i++) {
      const now = Math.floor(Date.now() / 1000);
      const token = await new SignJWT({ iss: as.issuer, aud: resource, sub: "x", exp: now + 600 })
        .setProtectedHeader({ alg: "ES256", kid: `made-up-${i}` })
        .sign(privateKey);
      await refused(token);
    }
    expect(as.jwksFetches() - before).toBeLessThanOrEqual(1);
  });

  test("a token in the query string is refused even beside a good header; two Authorization headers are ambiguous; an oversized one is refused unparsed", async () => {
    const good = await as.clientCredentials(resource, ALL_SCOPES);
    const query = await post(INIT, bearer(good), `/mcp?access_token=${good}`);
    expect(query.status).toBe(400);
    expect(query.headers.get("www-authenticate")).toStartWith('Bearer error="invalid_request"');
    const body = JSON.stringify(INIT);
    const twice = await rawRequest(
      server.port,
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nAuthorization: Bearer ${good}\r\nAuthorization: Bearer ${good}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(twice).toStartWith("HTTP/1.1 400 ");
    await refused("a".repeat(9000));
    expect(server.stderr()).not.toContain(good);
  });
});

describe("configuration", () => {
  const startupError = async (oauth: Table, extra: Table = {}) => {
    const config = writeConfig(dir.path, { server: { http: { oauth, ...extra } }, workdirs }, "bad.toml");
    const r = await runCli(["mcp", "--config", config, "--http", "127.0.0.1:0"], { killAfterMs: 30_000 });
    expect(r.code).toBe(2);
    return r.stderr.split("\n").find((l) => l.startsWith("serverfs: "));
  };

  test("OAuth with a static token, an http issuer off loopback, a resource with a fragment: configuration errors", async () => {
    dir.file("token", "t\n");
    expect(await startupError({ issuer: as.issuer, resource }, { bearer_token_file: `${dir.path}/token` })).toBe(
      "serverfs: configuration error: server.http.oauth: cannot be combined with server.http.bearer_token_file (use OAuth or the static token, not both)",
    );
    expect(await startupError({ issuer: "http://auth.example", resource })).toBe(
      "serverfs: configuration error: server.http.oauth.issuer: must be an https URL (http is allowed only for a loopback host)",
    );
    expect(await startupError({ issuer: as.issuer, resource: `${resource}#x` })).toBe(
      "serverfs: configuration error: server.http.oauth.resource: must not carry credentials or a fragment",
    );
  });
});

describe("the MCP SDK client's own OAuth support", () => {
  test("discovers the metadata from the 401, registers, authorizes by code with PKCE for this resource, and calls tools", async () => {
    const redirect = "http://127.0.0.1:1/callback";
    let clientInfo: OAuthClientInformationMixed | undefined;
    let tokens: OAuthTokens | undefined;
    let verifier = "";
    let authorizationUrl: URL | undefined;
    const provider: OAuthClientProvider = {
      redirectUrl: redirect,
      clientMetadata: {
        client_name: "sdk-test",
        redirect_uris: [redirect],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      },
      clientInformation: () => clientInfo,
      saveClientInformation: (info) => {
        clientInfo = info;
      },
      tokens: () => tokens,
      saveTokens: (t) => {
        tokens = t;
      },
      redirectToAuthorization: (url) => {
        authorizationUrl = url;
      },
      saveCodeVerifier: (v) => {
        verifier = v;
      },
      codeVerifier: () => verifier,
    };
    const url = new URL(resource);
    const first = new StreamableHTTPClientTransport(url, { authProvider: provider });
    await expect(new Client({ name: "sdk-test", version: "1" }).connect(first)).rejects.toThrow(UnauthorizedError);
    expect(authorizationUrl!.searchParams.get("resource")).toBe(resource);
    expect(authorizationUrl!.searchParams.get("code_challenge_method")).toBe("S256");
    expect(authorizationUrl!.searchParams.get("scope")).toBe("serverfs:read serverfs:write");

    const back = await authorizeInBrowser(authorizationUrl!, redirect);
    await first.finishAuth(back.searchParams.get("code")!);
    expect(decodeJwt(tokens!.access_token)).toMatchObject({ aud: resource, sub: "alice", scope: "serverfs:read serverfs:write" });

    const client = new Client({ name: "sdk-test", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
    try {
      const read = await client.callTool({ name: "read_text_file", arguments: { workdir: "ws", path: "hello.txt" } });
      expect((read.structuredContent as { content: string }).content).toBe("hello\n");
      const records = await server.waitFor("tool_call");
      expect(records.at(-1)).toMatchObject({ tool: "read_text_file", sub: "alice", client_id: clientInfo!.client_id });
    } finally {
      await client.close();
    }
  });
});

describe("an authorization server that cannot be reached", () => {
  test("ServerFS still starts; a token then gets 503 with Retry-After, not 401, and discovery is not retried per request; a configured jwks_uri needs no discovery", async () => {
    // an issuer whose metadata is missing: each discovery costs it two requests (RFC 8414, then OIDC)
    let asked = 0;
    const broken = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: () => {
        asked++;
        return new Response("not found", { status: 404 });
      },
    });
    const issuer = `http://127.0.0.1:${broken.port}`;
    const config = writeConfig(dir.path, { server: { http: { oauth: { issuer, resource } } }, workdirs }, "gone.toml");
    const down = await spawnHttpServer(config);
    try {
      const token = await as.forge({ aud: resource, iss: issuer });
      for (let i = 0; i < 3; i++) {
        const r = await fetch(`http://127.0.0.1:${down.port}/mcp`, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...bearer(token) },
          body: JSON.stringify(INIT),
        });
        expect(r.status).toBe(503);
        expect(r.headers.get("retry-after")).toBe("5");
        await r.text();
      }
      expect(asked).toBe(2);
      const reasons = parseAudit(down.stderr())
        .filter((e) => e["event"] === "http_auth_refused")
        .map((e) => e["reason"]);
      expect(reasons).toEqual(["discovery_failed", "discovery_failed", "discovery_failed"]);

      // with jwks_uri configured nothing is discovered: the same issuer's tokens are checked with those keys
      const direct = await spawnHttpServer(
        writeConfig(dir.path, { server: { http: { oauth: { issuer, resource, jwks_uri: `${as.issuer}/jwks` } } }, workdirs }, "jwks.toml"),
      );
      try {
        const r = await fetch(`http://127.0.0.1:${direct.port}/mcp`, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...bearer(token) },
          body: JSON.stringify(INIT),
        });
        expect(r.status).toBe(200);
        await r.text();
        expect(asked).toBe(2);
      } finally {
        await direct.stop();
      }
    } finally {
      await down.stop();
      broken.stop(true);
    }
  });
});
