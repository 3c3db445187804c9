/**
 * The 2025-11-25 wire as raw stdio lines (docs/decisions.md "MCP SDK"): what a client of that era
 * reads must not change with the SDK ServerFS is built on. The answers the SDK's v2 line would shape
 * differently by itself are pinned here byte for byte: a 2026-07-28 `server/discover` probe before
 * `initialize` is "method not found" (the hosts that probe fall back to `initialize` on it), results
 * carry no `resultType`, `ttlMs`, `cacheScope` or server identity in `_meta`, and a missing resource is
 * -32002, not the -32602 of 2026-07-28.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { VERSION } from "../../src/shared/version.ts";
import { rawSession } from "../helpers/raw-stdio.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

type Json = Record<string, unknown>;

let dir: TempDir;
let config: string;

beforeAll(() => {
  dir = tempDir();
  dir.file("ws/a.txt", "hello\n");
  // pinned to the 2025 era, whose wire this file keeps byte for byte
  config = writeConfig(dir.path, { server: { protocol_revisions: ["2025-11-25"] }, workdirs: [{ slot: 1, alias: "repo", path: `${dir.path}/ws` }] });
});
afterAll(() => dir.remove());

const SESSION: Json[] = [
  {
    jsonrpc: "2.0",
    id: "probe",
    method: "server/discover",
    params: { _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} } },
  },
  { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } },
  { jsonrpc: "2.0", method: "notifications/initialized" },
  { jsonrpc: "2.0", id: 2, method: "tools/list" },
  { jsonrpc: "2.0", id: 3, method: "resources/templates/list" },
  { jsonrpc: "2.0", id: 4, method: "resources/read", params: { uri: "serverfs://repo/nope.txt" } },
  { jsonrpc: "2.0", id: 5, method: "resources/read", params: { uri: "serverfs://repo/a.txt" } },
  { jsonrpc: "2.0", id: 6, method: "tools/call", params: { name: "nope", arguments: {} } },
  { jsonrpc: "2.0", id: 7, method: "ping" },
  { jsonrpc: "2.0", id: 8, method: "logging/setLevel", params: { level: "info" } },
  { jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "list_workdirs", arguments: {} } },
];

describe("the 2025-11-25 wire over stdio", () => {
  let byId: Map<unknown, Json>;
  beforeAll(async () => {
    byId = await rawSession(config, SESSION);
  });

  test("a 2026-07-28 server/discover before initialize is method not found, and initialize then answers as ever", () => {
    expect(byId.get("probe")).toEqual({ jsonrpc: "2.0", id: "probe", error: { code: -32601, message: "Method not found" } });
    const result = byId.get(1)!["result"] as Json;
    expect(Object.keys(result)).toEqual(["protocolVersion", "capabilities", "serverInfo", "instructions"]);
    expect(result["protocolVersion"]).toBe("2025-11-25");
    expect(result["capabilities"]).toEqual({ tools: { listChanged: false }, resources: { listChanged: false } });
    expect(result["serverInfo"]).toEqual({ name: "ServerFS", version: VERSION });
  });

  test("results carry no resultType, cache fields or _meta server identity", () => {
    expect(Object.keys(byId.get(2)!["result"] as Json)).toEqual(["tools"]);
    expect(Object.keys(byId.get(3)!["result"] as Json)).toEqual(["resourceTemplates"]);
    expect(byId.get(5)!["result"]).toEqual({ contents: [{ uri: "serverfs://repo/a.txt", mimeType: "text/plain", text: "hello\n" }] });
    expect(byId.get(7)!["result"]).toEqual({});
    expect(Object.keys(byId.get(9)!["result"] as Json)).toEqual(["content", "structuredContent"]);
  });

  test("a missing resource is -32002, an unknown tool -32602, an unserved method -32601, each with its exact message", () => {
    expect(byId.get(4)!["error"]).toEqual({ code: -32002, message: "PATH_NOT_FOUND: repo:nope.txt does not exist" });
    expect(byId.get(6)!["error"]).toEqual({ code: -32602, message: "Unknown tool: nope" });
    expect(byId.get(8)!["error"]).toEqual({ code: -32601, message: "Method not found" });
  });
});
