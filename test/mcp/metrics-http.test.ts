/**
 * `GET /metrics` on `serverfs mcp --http`'s listener (docs/mcp-tools.md#metrics): a real process, an SDK
 * client making calls that succeed and fail with known codes, then a scrape read by a parser of the
 * Prometheus text format (test/helpers/prometheus.ts); the endpoint stands behind the same Host, Origin
 * and bearer gates as `/mcp`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { errorCode, parseAudit } from "../helpers/mcp-client.ts";
import { poll } from "../helpers/poll.ts";
import { collect, spawnCli } from "../helpers/process.ts";
import { Scrape } from "../helpers/prometheus.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

const TOKEN = "metrics-test-token";
const ORIGIN = "https://ok.example";
/** A path whose name must never reach a label. */
const SECRET_NAME = "no-such-file-7c1e.txt";

let dir: TempDir;
let proc: ReturnType<typeof spawnCli>;
let stderr: ReturnType<typeof collect>;
let port: number;

beforeAll(async () => {
  dir = tempDir();
  dir.file("ws/a.txt", "hello\n");
  chmodSync(dir.file("token", `${TOKEN}\n`), 0o600);
  const config = writeConfig(dir.path, {
    server: { http: { bearer_token_file: `${dir.path}/token`, allowed_origins: [ORIGIN] } },
    workdirs: [{ slot: 1, alias: "repo", path: `${dir.path}/ws` }],
  });
  proc = spawnCli(["mcp", "--config", config, "--http", "127.0.0.1:0"]);
  stderr = collect(proc.stderr);
  const startup = () => parseAudit(stderr.text()).find((r) => r["event"] === "startup");
  await poll(() => startup() !== undefined, 15_000, "the startup audit line");
  port = Number(String(startup()!["listen"]).split(":").pop());
});
afterAll(async () => {
  proc?.kill("SIGTERM");
  await proc?.exited;
  dir?.remove();
});

const bearer = { authorization: `Bearer ${TOKEN}` };
const metrics = (init: RequestInit = {}) => fetch(`http://127.0.0.1:${port}/metrics`, init);
const scrape = async () => {
  const r = await metrics({ headers: bearer });
  expect(r.status).toBe(200);
  expect(r.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
  return new Scrape(await r.text());
};

describe("serverfs mcp --http: /metrics", () => {
  test("counts this process's tool calls by tool and outcome, their durations by tool, and the open sessions", async () => {
    const before = await scrape();
    expect(before.family("serverfs_mcp_tool_calls_total", "COUNTER").metrics).toEqual([]);
    expect(before.value("serverfs_mcp_http_sessions")).toBe(0);

    const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), { requestInit: { headers: bearer } });
    const client = new Client({ name: "t", version: "1" });
    await client.connect(transport);
    const call = async (name: string, args: Record<string, unknown>) => errorCode((await client.callTool({ name, arguments: args })) as CallToolResult);
    expect(await call("list_workdirs", {})).toBeNull();
    expect(await call("read_text_file", { workdir: "repo", path: "a.txt" })).toBeNull();
    expect(await call("read_text_file", { workdir: "repo", path: SECRET_NAME })).toBe("PATH_NOT_FOUND");
    expect(await call("read_text_file", { workdir: "repo", path: SECRET_NAME })).toBe("PATH_NOT_FOUND");
    expect(await call("read_text_file", { workdir: "nope", path: "a.txt" })).toBe("WORKDIR_NOT_FOUND");
    expect(await call("stat_file", { workdir: "repo" })).toBe("INVALID_ARGUMENT");
    // an unknown tool is a JSON-RPC error before any tool runs: nothing to count
    await expect(client.callTool({ name: "no_such_tool", arguments: {} })).rejects.toThrow();

    const during = await scrape();
    const calls = during.family("serverfs_mcp_tool_calls_total", "COUNTER");
    expect(calls.metrics.map((m) => [m.labels, Number(m.value)])).toEqual([
      [{ tool: "list_workdirs", outcome: "ok" }, 1],
      [{ tool: "read_text_file", outcome: "PATH_NOT_FOUND" }, 2],
      [{ tool: "read_text_file", outcome: "WORKDIR_NOT_FOUND" }, 1],
      [{ tool: "read_text_file", outcome: "ok" }, 1],
      [{ tool: "stat_file", outcome: "INVALID_ARGUMENT" }, 1],
    ]);
    // the counts are the tool_call audit lines', the one place every call is recorded
    const audited = parseAudit(stderr.text()).filter((r) => r["event"] === "tool_call");
    expect(audited.length).toBe(6);
    expect(during.histogramLabels("serverfs_mcp_tool_call_duration_seconds")).toEqual([
      { tool: "list_workdirs" },
      { tool: "read_text_file" },
      { tool: "stat_file" },
    ]);
    for (const [tool, count] of [
      ["list_workdirs", 1],
      ["read_text_file", 4],
      ["stat_file", 1],
    ] as const) {
      const h = during.histogram("serverfs_mcp_tool_call_duration_seconds", { tool })!;
      expect(h.count).toBe(count);
      const auditedMs = audited.filter((r) => r["tool"] === tool).reduce((sum, r) => sum + Number(r["duration_ms"]), 0);
      expect(h.sum).toBeCloseTo(auditedMs / 1000, 6);
      expect(h.buckets.get("300")).toBe(count);
      expect(h.buckets.size).toBe(17);
    }
    expect(during.value("serverfs_mcp_http_sessions")).toBe(1);
    expect([...during.families.keys()]).toEqual(["serverfs_mcp_tool_calls_total", "serverfs_mcp_tool_call_duration_seconds", "serverfs_mcp_http_sessions"]);
    // no path, argument or content in any label
    expect(during.text).not.toContain(SECRET_NAME);
    expect(during.text).not.toContain("repo");

    await transport.terminateSession();
    await client.close();
    await poll(async () => (await scrape()).value("serverfs_mcp_http_sessions") === 0, 15_000, "the session to be gone from the gauge");
  });

  test("stands behind the gates of /mcp: bearer token, Host, Origin; GET only", async () => {
    const none = await metrics();
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBe("Bearer");
    expect((await metrics({ headers: { authorization: "Bearer wrong" } })).status).toBe(401);
    const foreignHost = await metrics({ headers: { ...bearer, host: "evil.example" } });
    expect(foreignHost.status).toBe(421);
    expect(await foreignHost.text()).not.toContain("serverfs_");
    const foreignOrigin = await metrics({ headers: { ...bearer, origin: "https://evil.example" } });
    expect(foreignOrigin.status).toBe(403);
    expect(await foreignOrigin.text()).not.toContain("serverfs_");
    expect((await metrics({ headers: { ...bearer, origin: ORIGIN } })).status).toBe(200);
    for (const method of ["POST", "DELETE", "PUT"]) {
      const r = await metrics({ method, headers: bearer });
      expect(r.status).toBe(405);
      expect(r.headers.get("allow")).toBe("GET");
    }
  });
});
