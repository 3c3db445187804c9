/**
 * Revision 2026-07-28 over Streamable HTTP (docs/protocol.md), switched on by `[server]
 * protocol_revisions`: a request whose `MCP-Protocol-Version` names it is served on its own, with no
 * session, and the header checks answer their 2026-07-28 errors; 2025-era sessions go on beside it.
 * Two `serverfs mcp --http` behind one address answer alike whichever of them gets a request.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { spawnCli, waitForAuditEvent } from "../helpers/process.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

type Json = Record<string, unknown>;

const META = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} };

let dir: TempDir;
let config: string;
const procs: ReturnType<typeof spawnCli>[] = [];

/** A `serverfs mcp --http` on a free loopback port; its `/mcp` URL. */
async function startHttp(configPath: string): Promise<string> {
  const proc = spawnCli(["mcp", "--config", configPath, "--http", "127.0.0.1:0"]);
  procs.push(proc);
  const startup = await waitForAuditEvent(proc.stderr, "startup", 20_000);
  return `http://${String(startup["listen"])}/mcp`;
}

/** A modern client pinned to 2026-07-28 at `url`, connected. */
async function modernClient(url: string): Promise<ModernClient> {
  const client = new ModernClient({ name: "t", version: "1" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  await client.connect(new ModernHttp(new URL(url)));
  return client;
}

/** One raw 2026-07-28 POST: its status and JSON body. */
async function post(url: string, message: Json, headers: Record<string, string>): Promise<{ status: number; body: Json }> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28", ...headers },
    body: JSON.stringify(message),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

beforeAll(() => {
  dir = tempDir();
  dir.file("ws/a.txt", "hello\n");
  const workdirs = [{ slot: 1, alias: "repo", path: `${dir.path}/ws` }];
  config = writeConfig(dir.path, { server: { protocol_revisions: ["2025-11-25", "2026-07-28"] }, workdirs });
});
afterAll(async () => {
  for (const p of procs) p.kill("SIGTERM");
  await Promise.all(procs.map((p) => p.exited));
  dir.remove();
});

describe("one server, both eras over HTTP", () => {
  let url: string;
  beforeAll(async () => {
    url = await startHttp(config);
  }, 30_000);

  test("a 2026-07-28 client works without a session; a 2025 client beside it gets one", async () => {
    const modern = await modernClient(url);
    try {
      expect(modern.getProtocolEra()).toBe("modern");
      const result = await modern.callTool({ name: "read_text_file", arguments: { workdir: "repo", path: "a.txt" } });
      expect(result.structuredContent).toMatchObject({ content: "hello\n" });
    } finally {
      await modern.close();
    }
    const legacy = new Client({ name: "t", version: "1" });
    const transport = new StreamableHTTPClientTransport(new URL(url));
    await legacy.connect(transport);
    try {
      expect(transport.sessionId).toBeString();
      expect((await legacy.listTools()).tools.map((t) => t.name)).toContain("read_text_file");
    } finally {
      await legacy.close();
    }
  });

  test("server/discover and tools/call need no Mcp-Session-Id and carry resultType", async () => {
    const discover = await post(url, { jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: META } }, { "mcp-method": "server/discover" });
    expect(discover.status).toBe(200);
    expect(discover.body["result"]).toMatchObject({ supportedVersions: ["2026-07-28"], resultType: "complete", ttlMs: 60_000, cacheScope: "private" });
    const call = await post(
      url,
      { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "list_workdirs", arguments: {}, _meta: META } },
      { "mcp-method": "tools/call", "mcp-name": "list_workdirs" },
    );
    expect(call.status).toBe(200);
    expect(call.body["result"]).toMatchObject({ resultType: "complete" });
  });

  test("the header checks: a missing Mcp-Name is -32020, an unknown revision -32022, both with 400; tasks/list (and tasks/get without the Agent tools) is -32601 with 404", async () => {
    const noName = await post(
      url,
      { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "list_workdirs", arguments: {}, _meta: META } },
      { "mcp-method": "tools/call" },
    );
    expect({ status: noName.status, code: (noName.body["error"] as Json)["code"] }).toEqual({ status: 400, code: -32020 });
    const later = await post(
      url,
      { jsonrpc: "2.0", id: 4, method: "tools/list", params: { _meta: { ...META, "io.modelcontextprotocol/protocolVersion": "2099-01-01" } } },
      { "mcp-method": "tools/list", "mcp-protocol-version": "2099-01-01" },
    );
    expect({ status: later.status, error: later.body["error"] }).toMatchObject({
      status: 400,
      error: { code: -32022, data: { supported: ["2026-07-28"], requested: "2099-01-01" } },
    });
    const gone = await post(url, { jsonrpc: "2.0", id: 5, method: "tasks/list", params: { _meta: META } }, { "mcp-method": "tasks/list" });
    expect({ status: gone.status, code: (gone.body["error"] as Json)["code"] }).toEqual({ status: 404, code: -32601 });
    // without the Agent tools there is no Tasks extension either (docs/mcp-tasks.md#the-2026-07-28-extension)
    const taskId = `agt_${"0".repeat(24)}`;
    const noTasks = await post(
      url,
      { jsonrpc: "2.0", id: 6, method: "tasks/get", params: { taskId, _meta: META } },
      { "mcp-method": "tasks/get", "mcp-name": taskId },
    );
    expect({ status: noTasks.status, code: (noTasks.body["error"] as Json)["code"] }).toEqual({ status: 404, code: -32601 });
  });
});

describe("with 2025-11-25 alone", () => {
  test("a 2026-07-28 probe gets the answer a 2025 server always gave, so a probing host falls back to initialize", async () => {
    const only2025 = writeConfig(
      dir.path,
      { server: { protocol_revisions: ["2025-11-25"] }, workdirs: [{ slot: 1, alias: "repo", path: `${dir.path}/ws` }] },
      "only2025.toml",
    );
    const url = await startHttp(only2025);
    const probe = await post(url, { jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: META } }, { "mcp-method": "server/discover" });
    expect({ status: probe.status, error: probe.body["error"] }).toEqual({
      status: 400,
      error: { code: -32000, message: "Bad Request: Server not initialized" },
    });
  }, 30_000);
});

describe("two serverfs mcp --http behind one address", () => {
  test("give the same answers whichever of them serves each request", async () => {
    const upstreams = [await startHttp(config), await startHttp(config)];
    const hits = [0, 0];
    let next = 0;
    const proxy = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const i = next++ % upstreams.length;
        hits[i]!++;
        const headers = new Headers(req.headers);
        headers.delete("host");
        const res = await fetch(upstreams[i]!, { method: req.method, headers, body: await req.arrayBuffer() });
        return new Response(res.body, { status: res.status, headers: res.headers });
      },
    });
    try {
      const client = await modernClient(`http://127.0.0.1:${proxy.port}/mcp`);
      try {
        const answers: unknown[] = [];
        for (let i = 0; i < 4; i++) {
          answers.push((await client.callTool({ name: "read_text_file", arguments: { workdir: "repo", path: "a.txt" } })).structuredContent);
        }
        expect(answers.every((a) => JSON.stringify(a) === JSON.stringify(answers[0]))).toBe(true);
        expect((await client.listTools()).tools.length).toBeGreaterThan(5);
      } finally {
        await client.close();
      }
      expect(hits[0]).toBeGreaterThan(0);
      expect(hits[1]).toBeGreaterThan(0);
    } finally {
      await proxy.stop(true);
    }
  }, 60_000);
});
