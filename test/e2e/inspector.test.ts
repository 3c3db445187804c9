/**
 * The surface through a client nobody here wrote: the MCP Inspector's CLI
 * (`npx @modelcontextprotocol/inspector --cli --format json`, a pinned devDependency, so `npx --no`
 * never downloads anything) runs `serverfs mcp --config F` as its stdio target, next to a real Bridge.
 * Its exit code 0 is a successful call, 5 a tool error (isError).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type BridgeEnv, type BridgeProcess, bridgeEnv, startBridgeProcess } from "../helpers/bridge.ts";
import { AGENT_TOOLS, FILESYSTEM_TOOLS } from "../helpers/tool-names.ts";
import { REPO_ROOT, SERVERFS, type TempDir, tempDir } from "../helpers/workspace.ts";
import type { Json } from "./support.ts";

const PACKAGE = "@modelcontextprotocol/inspector";
const TOOL_ERROR_EXIT = 5;

let env: BridgeEnv;
let bridge: BridgeProcess;
let home: TempDir;

interface Run {
  code: number;
  out: Json;
  stderr: string;
}

/** One inspector invocation against `serverfs mcp --config F`, bounded; stdout is its one JSON object. */
async function inspector(args: string[]): Promise<Run> {
  const proc = Bun.spawn(
    ["npx", "--no", "--", PACKAGE, "--cli", "--format", "json", "--cwd", REPO_ROOT, ...args, "--", ...SERVERFS, "mcp", "--config", env.configPath],
    {
      cwd: REPO_ROOT,
      // its own HOME: the inspector and npx keep their state there, never in the user's
      env: { ...process.env, HOME: home.path, npm_config_update_notifier: "false" },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  const timer = setTimeout(() => proc.kill("SIGKILL"), 45_000);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  let out: Json = {};
  try {
    out = JSON.parse(stdout) as Json;
  } catch {
    throw new Error(`the inspector printed no JSON (exit ${code}): ${stderr.slice(-500)}`);
  }
  return { code, out, stderr };
}

beforeAll(async () => {
  home = tempDir("sfs-h-");
  env = bridgeEnv();
  bridge = await startBridgeProcess(env);
});
afterAll(async () => {
  if (bridge && bridge.proc.exitCode === null) await bridge.stop();
  env?.dir.remove();
  home?.remove();
});

describe("a client nobody here wrote: the MCP Inspector CLI", () => {
  test("it is a devDependency pinned to an exact version", () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { devDependencies: Record<string, string> };
    expect(pkg.devDependencies[PACKAGE]).toMatch(/^\d+\.\d+\.\d+$/);
  });

  test("tools/list shows the 20 tools in the order of registration, each with its annotations", async () => {
    const r = await inspector(["--method", "tools/list"]);
    expect(r.code).toBe(0);
    const tools = (r.out["result"] as { tools: { name: string; annotations: Json; inputSchema: Json }[] }).tools;
    expect(tools.map((t) => t.name)).toEqual([...FILESYSTEM_TOOLS, ...AGENT_TOOLS]);
    for (const t of tools) {
      expect(Object.keys(t.annotations)).toEqual(expect.arrayContaining(["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]));
      expect(t.inputSchema["additionalProperties"]).toBe(false);
    }
  }, 60_000);

  test("tools/call list_workdirs succeeds (exit 0) with structuredContent and its JSON text", async () => {
    const r = await inspector(["--method", "tools/call", "--tool-name", "list_workdirs"]);
    expect(r.code).toBe(0);
    const result = r.out["result"] as { structuredContent: { workdirs: Json[] }; content: { text: string }[]; isError?: boolean };
    expect(result.isError ?? false).toBe(false);
    expect(result.structuredContent.workdirs).toEqual([
      { alias: "repo", description: null, access: "read-write", binary_transfer: false, agent_mode: "workspace-write", agent_runtimes: ["fake"] },
    ]);
    expect(result.content[0]!.text).toBe(JSON.stringify(result.structuredContent));
  }, 60_000);

  test("an Agent tool through the inspector reaches the Bridge: list_agent_runtimes lists fake", async () => {
    const r = await inspector(["--method", "tools/call", "--tool-name", "list_agent_runtimes"]);
    expect(r.code).toBe(0);
    const runtimes = (r.out["result"] as { structuredContent: { runtimes: Json[] } }).structuredContent.runtimes;
    expect(runtimes.map((x) => [x["name"], x["available"]])).toEqual([["fake", true]]);
  }, 60_000);

  test("a failing call is a tool error: exit 5, isError and CODE: message", async () => {
    const r = await inspector(["--method", "tools/call", "--tool-name", "stat_file", "--tool-args-json", JSON.stringify({ workdir: "repo", path: "../x" })]);
    expect(r.code).toBe(TOOL_ERROR_EXIT);
    const result = r.out["result"] as { isError: boolean; content: { text: string }[]; structuredContent?: unknown };
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toBeUndefined();
    expect(result.content[0]!.text).toMatch(/^PATH_OUTSIDE_WORKDIR: /);
  }, 60_000);
});
