/**
 * The real Claude Code as an MCP client of a real `serverfs mcp` (docs/hosts.md "Tested hosts"),
 * offline: `serverfs connect claude-code --write` registers the server exactly as a person would,
 * `claude -p --allowedTools mcp__serverfs` runs one conversation against the scripted Messages mock of
 * test/fixtures/mock-anthropic.ts, which answers with the tool calls of test/hosts/scenario.ts, and a
 * real `serverfs bridge` runs the Agent task on the `fake` runtime. What the model was shown (the tool
 * list with its schemas, every result) is read from the requests the mock received. Without the CLI
 * the file is skipped loudly, except under CI=true, where that is a failure.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SERVER_NAME } from "../../src/main/operator/host-setup.ts";
import { CLAUDE_BIN, CLAUDE_PRESENT, claudeHostEnv, cliMissing, stopHostRun } from "../fixtures/agent-stack.ts";
import { type MockAnthropic, type ScriptEntry, startMockAnthropic, toolResults } from "../fixtures/mock-anthropic.ts";
import type { BridgeEnv, BridgeProcess } from "../helpers/bridge.ts";
import { runCli, runToEnd } from "../helpers/process.ts";
import { FILESYSTEM_TOOLS, FINAL_WORDS, type ListedTool, SCENARIO, type SeenResult, scenarioScript, seenByLabel, startScenarioServer } from "./scenario.ts";
import { expectScenarioResults, PERSISTED } from "./scenario-checks.ts";

if (!CLAUDE_PRESENT) cliMissing("Claude Code", CLAUDE_BIN, "npm install --no-save @anthropic-ai/claude-code@2.1.332");

/** What `claude -p` needs to allow ServerFS's tools, as `serverfs connect claude-code` prints it. */
const ALLOW = `mcp__${SERVER_NAME}`;
const PREFIX = `${ALLOW}__`;
const RUN_MS = 120_000;

/** The scenario as the mock's script, ending with the model's last words. */
const script = (labels: string[]): ScriptEntry[] => [
  ...scenarioScript(labels, toolResults, (tool, input) => ({ tool: `${PREFIX}${tool}`, input })),
  { say: FINAL_WORDS },
];

describe.skipIf(!CLAUDE_PRESENT)("Claude Code as the MCP host", () => {
  let env: BridgeEnv;
  let bridge: BridgeProcess;
  let mock: MockAnthropic;
  let home: string;
  const labels: string[] = [];
  let connectOut = "";
  let output: Record<string, unknown> = {};
  let listed: ListedTool[] = [];
  let seen = new Map<string, SeenResult>();
  let seenInOrder: SeenResult[] = [];

  beforeAll(async () => {
    // the schemas the server itself lists, to compare with what the host shows the model
    ({ env, bridge, listed } = await startScenarioServer());

    mock = startMockAnthropic(script(labels));
    const host = claudeHostEnv(mock);
    home = host.home;
    const hostEnv = host.env;
    // the setup docs/hosts.md gives, applied by serverfs itself through `claude mcp add`
    const printed = await runCli(["connect", "claude-code", "--config", env.configPath], { env: hostEnv });
    expect(printed.stdout).toContain(`claude -p --allowedTools ${ALLOW} `);
    const connected = await runCli(["connect", "claude-code", "--write", "--config", env.configPath], { env: hostEnv });
    connectOut = connected.stdout + connected.stderr;
    expect(connected.code).toBe(0);

    const { stdout, stderr, code } = await runToEnd([CLAUDE_BIN, "-p", "--allowedTools", ALLOW, "--output-format", "json", "use the serverfs tools"], {
      cwd: env.workspace,
      env: hostEnv,
      killAfterMs: RUN_MS,
    });
    if (code !== 0) throw new Error(`claude -p exited ${code}: ${stderr.slice(0, 2000)} ${stdout.slice(0, 2000)}`);
    output = JSON.parse(stdout) as Record<string, unknown>;
    const last = mock.requests.at(-1)!;
    seenInOrder = toolResults(last);
    seen = seenByLabel(labels, seenInOrder);
  }, RUN_MS + 30_000);

  afterAll(() => stopHostRun({ bridge, mock, env, home }));

  test("serverfs connect printed the --allowedTools the run uses and registered the server through claude mcp add", () => {
    expect(connectOut).toContain("added serverfs to Claude Code (user scope)");
  });

  test("the model is shown every listed tool as mcp__serverfs__<name>, with the server's input schema unchanged", () => {
    const shown = (mock.requests[0]!.tools as { name: string; input_schema: unknown }[]).filter((t) => t.name.startsWith(PREFIX));
    expect(shown.map((t) => t.name.slice(PREFIX.length)).sort()).toEqual(listed.map((t) => t.name).sort());
    expect(listed.length).toBe(20);
    for (const t of listed) {
      const host = shown.find((s) => s.name === `${PREFIX}${t.name}`)!;
      expect({ tool: t.name, schema: host.input_schema }).toEqual({ tool: t.name, schema: t.inputSchema });
    }
  });

  test("every scenario call reached the server and its result reached the model; the run ends with the model's last words", () => {
    expect(labels).toEqual(expect.arrayContaining(SCENARIO.map((c) => c.label)));
    expect(seenInOrder).toHaveLength(labels.length);
    expect(output["result"]).toBe(FINAL_WORDS);
    for (const tool of FILESYSTEM_TOOLS) expect(labels).toContain(tool);
  });

  test("filesystem results, the `CODE: message` errors, the expected_revision edit and the fake task's spooled result", () => {
    expectScenarioResults(seen, env.workspace);
    expect(() => readFileSync(join(env.workspace, "made", "note.txt"))).toThrow();
  });

  test("the spooled task's get_agent_task is past the inline limit and reaches the model as a preview; a chunk of the max_bytes the tool advises stays inline", () => {
    // what the preview must still hold is checked above (scenario-checks.ts)
    expect(seen.get("get_agent_task")!.text.startsWith(PERSISTED)).toBe(true);
    expect(seen.get("read_agent_task_result")!.text.startsWith(PERSISTED)).toBe(false);
  });
});
