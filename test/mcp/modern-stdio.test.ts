/**
 * Revision 2026-07-28 over stdio (docs/protocol.md), switched on by `[server] protocol_revisions`: the
 * opening exchange picks the era of the connection. A 2026-07-28 client is served per request (the
 * `_meta` envelope on every request, `resultType` on every result, cache fields on the lists, server
 * identity in `_meta`), a 2025-era client on the same configuration exactly as before, and with
 * 2026-07-28 alone a 2025 opening is refused.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client as ModernClient } from "@modelcontextprotocol/client";
import { StdioClientTransport as ModernStdio } from "@modelcontextprotocol/client/stdio";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { VERSION } from "../../src/shared/version.ts";
import { rawSession } from "../helpers/raw-stdio.ts";
import { SERVERFS, type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

type Json = Record<string, unknown>;

const META = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} };
const SERVER_INFO = { "io.modelcontextprotocol/serverInfo": { name: "ServerFS", version: VERSION } };

let dir: TempDir;
let both: string;
let modernOnly: string;

beforeAll(() => {
  dir = tempDir();
  dir.file("ws/a.txt", "hello\n");
  const workdirs = [{ slot: 1, alias: "repo", path: `${dir.path}/ws` }];
  both = writeConfig(dir.path, { server: { protocol_revisions: ["2025-11-25", "2026-07-28"] }, workdirs }, "both.toml");
  modernOnly = writeConfig(dir.path, { server: { protocol_revisions: ["2026-07-28"] }, workdirs }, "modern.toml");
});
afterAll(() => dir.remove());

const request = (id: unknown, method: string, params: Json = {}): Json => ({ jsonrpc: "2.0", id, method, params: { ...params, _meta: META } });

describe("a 2026-07-28 client on stdio", () => {
  let byId: Map<unknown, Json>;
  beforeAll(async () => {
    byId = await rawSession(both, [
      request("discover", "server/discover"),
      request(1, "tools/list"),
      request(2, "tools/call", { name: "read_text_file", arguments: { workdir: "repo", path: "a.txt" } }),
      request(3, "resources/read", { uri: "serverfs://repo/nope.txt" }),
      { jsonrpc: "2.0", id: 4, method: "tools/list", params: {} },
      request(5, "ping"),
      request(6, "tasks/list"),
      { jsonrpc: "2.0", id: 7, method: "tools/list", params: { _meta: { ...META, "io.modelcontextprotocol/protocolVersion": "2099-01-01" } } },
      request(8, "resources/read", { uri: "test://not-ours" }),
      request(9, "resources/read", { uri: "serverfs://repo/a.txt" }),
      request(10, "resources/templates/list"),
      request(11, "resources/list"),
    ]);
  });

  test("server/discover names 2026-07-28, the capabilities and the server, with resultType and cache fields", () => {
    const result = byId.get("discover")!["result"] as Json;
    expect(result).toMatchObject({
      supportedVersions: ["2026-07-28"],
      capabilities: { tools: { listChanged: false }, resources: { listChanged: false } },
      resultType: "complete",
      ttlMs: 60_000,
      cacheScope: "private",
      _meta: SERVER_INFO,
    });
    expect(typeof result["instructions"]).toBe("string");
  });

  test("every result carries resultType and the server's identity; the lists fixed by the config may be kept a minute, privately, a file's content not at all", () => {
    expect(byId.get(1)!["result"]).toMatchObject({ resultType: "complete", ttlMs: 60_000, cacheScope: "private", _meta: SERVER_INFO });
    expect(byId.get(10)!["result"]).toMatchObject({ resultType: "complete", ttlMs: 60_000, cacheScope: "private" });
    expect(byId.get(11)!["result"]).toMatchObject({ resultType: "complete", resources: [], ttlMs: 0, cacheScope: "private" });
    expect(byId.get(9)!["result"]).toMatchObject({ resultType: "complete", contents: [{ text: "hello\n" }], ttlMs: 0, cacheScope: "private" });
    const call = byId.get(2)!["result"] as Json;
    expect(call).toMatchObject({ resultType: "complete", _meta: SERVER_INFO });
    expect(call["structuredContent"]).toMatchObject({ path: "a.txt", content: "hello\n" });
  });

  test("a missing resource, and a URI of another scheme, is -32602 with data.uri on this revision; a request without the _meta envelope is -32602; ping and tasks/list are gone", () => {
    expect(byId.get(3)!["error"]).toEqual({ code: -32602, message: "PATH_NOT_FOUND: repo:nope.txt does not exist", data: { uri: "serverfs://repo/nope.txt" } });
    expect(byId.get(8)!["error"]).toEqual({
      code: -32602,
      message: "INVALID_ARGUMENT: the resource URI must start with serverfs://",
      data: { uri: "test://not-ours" },
    });
    expect((byId.get(4)!["error"] as Json)["code"]).toBe(-32602);
    expect(byId.get(5)!["error"]).toEqual({ code: -32601, message: "Method not found" });
    expect(byId.get(6)!["error"]).toEqual({ code: -32601, message: "Method not found" });
  });

  test("a request naming a revision not served is -32022, though the connection opened at 2026-07-28", () => {
    expect(byId.get(7)!["error"]).toMatchObject({ code: -32022, data: { supported: ["2026-07-28"], requested: "2099-01-01" } });
  });

  test("the SDK's v2 client pinned to 2026-07-28 lists and calls the tools", async () => {
    const client = new ModernClient({ name: "t", version: "1" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await client.connect(new ModernStdio({ command: SERVERFS[0]!, args: [...SERVERFS.slice(1), "mcp", "--config", both], stderr: "ignore" }));
    try {
      expect(client.getProtocolEra()).toBe("modern");
      expect((await client.listTools()).tools.map((t) => t.name)).toContain("read_text_file");
      const result = await client.callTool({ name: "read_text_file", arguments: { workdir: "repo", path: "a.txt" } });
      expect(result.structuredContent).toMatchObject({ content: "hello\n" });
    } finally {
      await client.close();
    }
  });
});

describe("a 2025-era client of the same configuration", () => {
  test("initializes at 2025-11-25 and calls the tools as before", async () => {
    const client = new Client({ name: "t", version: "1" });
    const transport = new StdioClientTransport({ command: SERVERFS[0]!, args: [...SERVERFS.slice(1), "mcp", "--config", both], stderr: "ignore" });
    await client.connect(transport);
    try {
      expect(client.getServerVersion()).toEqual({ name: "ServerFS", version: VERSION });
      const result = await client.callTool({ name: "read_text_file", arguments: { workdir: "repo", path: "a.txt" } });
      expect(Object.keys(result)).toEqual(["content", "structuredContent"]);
    } finally {
      await client.close();
    }
  });

  test("with 2026-07-28 alone, its initialize is refused as an unsupported protocol version", async () => {
    const byId = await rawSession(modernOnly, [
      { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } },
    ]);
    expect(byId.get(1)!["error"]).toMatchObject({ code: -32022, data: { supported: ["2026-07-28"], requested: "2025-11-25" } });
  });
});
