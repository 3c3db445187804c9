/**
 * The real Codex (`codex exec`) as an MCP client of a real `serverfs mcp` (docs/hosts.md "Tested
 * hosts"), offline: the CODEX_HOME holds the mock model provider, then `serverfs connect codex --write
 * --auto-approve` appends the `[mcp_servers.serverfs]` table exactly as a person would, and the
 * scripted Responses mock of test/fixtures/mock-openai.ts answers with the tool calls of
 * test/hosts/scenario.ts; a real `serverfs bridge` runs the Agent task on the `fake` runtime. Codex
 * defers MCP tools behind its `tool_search` tool, so the scripted model searches first, as a real one
 * does; what it was shown (the tool definitions, every result) is read from the requests the mock
 * received. Without the CLI the file is skipped loudly, except under CI=true, where that is a failure.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CODEX_BIN, CODEX_PRESENT, CODEX_VERSION, cliMissing, codexHome, stopHostRun } from "../fixtures/agent-stack.ts";
import { type MockOpenAI, type ScriptEntry, startMockOpenAI } from "../fixtures/mock-openai.ts";
import { type BridgeEnv, type BridgeProcess, bridgeEnv, call, startBridgeProcess } from "../helpers/bridge.ts";
import { runCli } from "../helpers/process.ts";
import { codexExec, type Item, inputOf, NAMESPACE, RUN_MS, toolResults } from "./codex-host.ts";
import { FILESYSTEM_TOOLS, FINAL_WORDS, type ListedTool, SCENARIO, type SeenResult, scenarioScript, seenByLabel, startScenarioServer } from "./scenario.ts";
import { expectScenarioResults } from "./scenario-checks.ts";

if (!CODEX_PRESENT) cliMissing("Codex", CODEX_BIN, `npm install --no-save @openai/codex@${CODEX_VERSION}`);

/** The JSON Schema keywords Codex 0.171.0 leaves out of the tool definitions it shows the model. */
const DROPPED = ["minimum", "maximum", "default", "minLength", "pattern"];

/** The scenario as the mock's script: a tool search first, as a real model does, and the model's last words at the end. */
const script = (labels: string[]): ScriptEntry[] => [
  { toolSearch: "serverfs workdir file agent task", limit: 50 },
  ...scenarioScript(labels, toolResults, (tool, args) => ({ call: tool, namespace: NAMESPACE, args })),
  { say: FINAL_WORDS },
];

/** `schema` without the keywords Codex drops, at every depth. */
function withoutDropped(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutDropped);
  if (typeof schema !== "object" || schema === null) return schema;
  return Object.fromEntries(
    Object.entries(schema)
      .filter(([k]) => !DROPPED.includes(k))
      .map(([k, v]) => [k, k === "properties" ? Object.fromEntries(Object.entries(v as Item).map(([p, s]) => [p, withoutDropped(s)])) : withoutDropped(v)]),
  );
}

/** One `codex exec` turn in `cwd`; its final message. */
const exec = async (home: string, cwd: string): Promise<string> => (await codexExec(CODEX_BIN, home, cwd)).final;

describe.skipIf(!CODEX_PRESENT)("Codex (codex exec) as the MCP host", () => {
  let env: BridgeEnv;
  let bridge: BridgeProcess;
  let mock: MockOpenAI;
  let home: string;
  const labels: string[] = [];
  let connectOut = "";
  let finalText = "";
  let listed: ListedTool[] = [];
  let seen = new Map<string, SeenResult>();
  let seenInOrder: SeenResult[] = [];

  beforeAll(async () => {
    ({ env, bridge, listed } = await startScenarioServer());

    mock = startMockOpenAI();
    mock.script(...script(labels));
    home = codexHome(mock);
    // the setup docs/hosts.md gives, appended by serverfs itself to the config.toml already there
    const connected = await runCli(["connect", "codex", "--write", "--auto-approve", "--config", env.configPath], { env: { CODEX_HOME: home } });
    connectOut = connected.stdout + connected.stderr;
    expect(connected.code).toBe(0);

    finalText = await exec(home, env.workspace);
    seenInOrder = toolResults(mock.requests.at(-1)!);
    seen = seenByLabel(labels, seenInOrder);
  }, RUN_MS + 30_000);

  afterAll(() => stopHostRun({ bridge, mock, env, home }));

  test("serverfs connect appended the server with auto-approval and kept the provider config", () => {
    expect(connectOut).toContain("added [mcp_servers.serverfs]");
    const toml = readFileSync(join(home, "config.toml"), "utf8");
    expect(toml).toContain('model_provider = "mock"');
    expect(toml).toMatch(/^default_tools_approval_mode = "approve"$/m);
  });

  test("tool_search shows the model every listed tool in the mcp__serverfs namespace; the schema loses exactly minimum, maximum, default, minLength and pattern", () => {
    const output = inputOf(mock.requests[1]!).find((i) => i["type"] === "tool_search_output")!;
    const ns = (output["tools"] as Item[]).find((t) => t["name"] === NAMESPACE)!;
    const shown = ns["tools"] as { name: string; parameters: unknown }[];
    expect(shown.map((t) => t.name).sort()).toEqual(listed.map((t) => t.name).sort());
    expect(listed.length).toBe(20);
    for (const t of listed) {
      const host = shown.find((s) => s.name === t.name)!;
      expect({ tool: t.name, schema: host.parameters }).toEqual({ tool: t.name, schema: withoutDropped(t.inputSchema) });
    }
    // the loss is real: the server's own schema has these bounds
    expect(JSON.stringify(listed.find((t) => t.name === "read_agent_task_events")!.inputSchema)).toContain('"maximum":25000');
  });

  test("every scenario call reached the server and its result reached the model; the run ends with the model's last words", () => {
    expect(labels).toEqual(expect.arrayContaining(SCENARIO.map((c) => c.label)));
    expect(seenInOrder).toHaveLength(labels.length);
    expect(finalText).toBe(FINAL_WORDS);
    for (const tool of FILESYSTEM_TOOLS) expect(labels).toContain(tool);
  });

  test("filesystem results, the `CODE: message` errors, the expected_revision edit and the fake task's spooled result", () => {
    expectScenarioResults(seen, env.workspace);
  });
});

describe.skipIf(!CODEX_PRESENT)("Codex without --auto-approve", () => {
  test(
    "codex exec cannot run a tool marked destructive: submit_agent_task never reaches the server",
    async () => {
      const env = bridgeEnv();
      const bridge = await startBridgeProcess(env);
      const mock = startMockOpenAI([
        { toolSearch: "serverfs agent task", limit: 50 },
        { call: "submit_agent_task", namespace: NAMESPACE, args: { runtime: "fake", workdir: "repo", profile: "review", prompt: "repeat:1:x" } },
        { say: FINAL_WORDS },
      ]);
      const home = codexHome(mock);
      try {
        const connected = await runCli(["connect", "codex", "--write", "--config", env.configPath], { env: { CODEX_HOME: home } });
        expect(connected.code).toBe(0);
        expect(readFileSync(join(home, "config.toml"), "utf8")).toMatch(/^# default_tools_approval_mode = "approve"$/m);
        expect(await exec(home, env.workspace)).toBe(FINAL_WORDS);
        const [seen] = toolResults(mock.requests.at(-1)!);
        // Codex refuses the call itself; the model is told so in Codex's words, not the server's
        expect(seen?.text).toBe("MCP tool call requires approval, but approval policy is never");
        const listed = await call<{ tasks: unknown[] }>(env.socketPath, "task.list", {});
        expect(listed.tasks).toEqual([]);
      } finally {
        await stopHostRun({ bridge, mock, env, home });
      }
    },
    RUN_MS + 30_000,
  );
});
