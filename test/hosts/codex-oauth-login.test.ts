/**
 * The real Codex's `codex mcp login` against ServerFS as an OAuth resource server and a real
 * authorization server on loopback (docs/deployment.md#remote-use-with-oauth), offline: Codex reads the
 * Protected Resource Metadata of ServerFS, registers itself dynamically, and runs the code flow with PKCE for this
 * resource; the test plays the browser (--no-browser prints the URL) and lets the flow land on Codex's
 * own callback listener. The token Codex stores then opens a session at ServerFS. Without the CLI the
 * file is skipped loudly, except under CI=true, where that is a failure.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { decodeJwt } from "jose";
import { CODEX_BIN, CODEX_PRESENT, CODEX_VERSION, cliMissing } from "../fixtures/agent-stack.ts";
import { freePort, spawnHttpServer, stopHttpServers } from "../helpers/http-server.ts";
import { type AuthServer, authorizeInBrowser, startAuthServer } from "../helpers/oauth-server.ts";
import { poll } from "../helpers/poll.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

if (!CODEX_PRESENT) cliMissing("Codex", CODEX_BIN, `npm install --no-save @openai/codex@${CODEX_VERSION}`);

let dir: TempDir;
let as: AuthServer;
let resource: string;

beforeAll(async () => {
  dir = tempDir();
  dir.dir("ws");
  as = await startAuthServer();
  const port = await freePort();
  resource = `http://127.0.0.1:${port}/mcp`;
  const config = writeConfig(dir.path, {
    server: { http: { oauth: { issuer: as.issuer, resource } } },
    workdirs: [{ slot: 1, alias: "ws", path: `${dir.path}/ws` }],
  });
  await spawnHttpServer(config, `127.0.0.1:${port}`);
});

afterAll(async () => {
  stopHttpServers();
  await as?.close();
  dir?.remove();
});

describe.skipIf(!CODEX_PRESENT)("codex mcp login", () => {
  test("discovers, registers, authorizes with PKCE for this resource, and stores a token ServerFS accepts", async () => {
    const home = dir.dir("codex-home");
    writeFileSync(join(home, "config.toml"), `mcp_oauth_credentials_store = "file"\n\n[mcp_servers.serverfs]\nurl = "${resource}"\n`);
    const proc = Bun.spawn([CODEX_BIN, "mcp", "login", "serverfs", "--no-browser"], {
      env: { ...process.env, CODEX_HOME: home, HOME: home },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    let out = "";
    const decoder = new TextDecoder();
    void (async () => {
      for await (const chunk of proc.stdout) out += decoder.decode(chunk, { stream: true });
    })();
    void (async () => {
      for await (const chunk of proc.stderr) out += decoder.decode(chunk, { stream: true });
    })();
    try {
      const AUTH_URL = /(http:\/\/127\.0\.0\.1:\d+\/auth\?\S+)/;
      await poll(
        () => AUTH_URL.test(out),
        60_000,
        () => `the authorization URL (output so far: ${out.slice(-500)})`,
      );
      const url = new URL(AUTH_URL.exec(out)![1]!);
      expect(url.searchParams.get("resource")).toBe(resource);
      expect(url.searchParams.get("code_challenge_method")).toBe("S256");
      expect(url.searchParams.get("scope")?.split(" ")).toEqual(expect.arrayContaining(["serverfs:read", "serverfs:write"]));
      const back = await authorizeInBrowser(url, url.searchParams.get("redirect_uri")!);
      // the browser lands on Codex's callback listener, which finishes the exchange
      expect((await fetch(back)).status).toBe(200);
      expect(await proc.exited).toBe(0);
    } finally {
      proc.kill();
    }
    expect(out).toContain("Successfully logged in to MCP server 'serverfs'");
    const stored = Object.values(JSON.parse(readFileSync(join(home, ".credentials.json"), "utf8")) as Record<string, { access_token: string }>)[0]!;
    expect(decodeJwt(stored.access_token)).toMatchObject({ aud: resource, sub: "alice" });
    const r = await fetch(resource, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${stored.access_token}` },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      }),
    });
    expect(r.status).toBe(200);
    await r.text();
  });
});
