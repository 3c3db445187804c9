/**
 * The real Claude Code against a `serverfs mcp` that serves both MCP revisions (docs/hosts.md "Tested
 * hosts", docs/protocol.md#hosts): Claude Code probes `server/discover` first, so it picks 2026-07-28,
 * over stdio (set up by `serverfs connect claude-code --write`) and over Streamable HTTP (`claude mcp
 * add --transport http`, a `serverfs mcp --http` run here). `claude -p` runs a conversation against the
 * scripted Messages mock: list the workdirs, read a file, submit a task on the `fake` runtime and poll
 * get_agent_task until it has ended. The revision is what Claude Code's own debug log (`--debug-file`)
 * says it negotiated; it quotes only the server's first stderr lines, so not ServerFS's `tool_call`
 * audit lines. Without the CLI the file is skipped loudly, except under CI=true.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { SERVER_NAME } from "../../src/main/operator/host-setup.ts";
import { CLAUDE_BIN, CLAUDE_PRESENT, claudeHostEnv, cliMissing, stopHostRun } from "../fixtures/agent-stack.ts";
import { type MockAnthropic, type MockRequest, type ScriptEntry, startMockAnthropic, toolResults } from "../fixtures/mock-anthropic.ts";
import { type BridgeEnv, type BridgeProcess, bridgeEnv, startBridgeProcess } from "../helpers/bridge.ts";
import { runCli, runToEnd, spawnCli, waitForAuditEvent } from "../helpers/process.ts";
import { FINAL_WORDS, submittedTaskId } from "./scenario.ts";

if (!CLAUDE_PRESENT) cliMissing("Claude Code", CLAUDE_BIN, "npm install --no-save @anthropic-ai/claude-code@2.1.332");

const ALLOW = `mcp__${SERVER_NAME}`;
const PREFIX = `${ALLOW}__`;
const RUN_MS = 120_000;
const MODERN = "2026-07-28";

type Json = Record<string, unknown>;

const taskIdOf = (request: MockRequest): string => submittedTaskId(toolResults(request));

function script(labels: string[]): ScriptEntry[] {
  const step = (tool: string, input: Json) => () => {
    labels.push(tool);
    return { tool: `${PREFIX}${tool}`, input };
  };
  let asked = false;
  return [
    step("list_workdirs", {}),
    step("read_text_file", { workdir: "repo", path: "README.md" }),
    step("submit_agent_task", { runtime: "fake", workdir: "repo", profile: "review", prompt: "complete:from-claude-2026" }),
    {
      poll: (request: MockRequest) => {
        if (asked && /"status":"(succeeded|failed|cancelled|interrupted)"/.test(toolResults(request).at(-1)?.text ?? "")) return null;
        asked = true;
        labels.push("get_agent_task");
        return { tool: `${PREFIX}get_agent_task`, input: { task_id: taskIdOf(request) } };
      },
    },
    { say: FINAL_WORDS },
  ];
}

/** What Claude Code's debug log says of its connection to ServerFS, once it is established. */
function connection(log: string): Json {
  const marker = `MCP server "${SERVER_NAME}": Connection established with capabilities: `;
  const line = log.split("\n").find((l) => l.includes(marker));
  if (line === undefined) throw new Error("Claude Code's debug log names no established connection");
  return JSON.parse(line.slice(line.indexOf(marker) + marker.length)) as Json;
}

/** The ServerFS tools Claude Code's debug log says it called, in order. */
const calledTools = (log: string): string[] =>
  [...log.matchAll(new RegExp(`MCP server "${SERVER_NAME}": Calling MCP tool: ([a-z_]+)$`, "gm"))].map((m) => m[1]!);

/**
 * One transport's run: `connect` registers ServerFS with Claude Code (its env given) and returns what
 * to stop afterwards; then `claude -p` carries the conversation.
 */
function claudeOn(transport: string, connect: (env: BridgeEnv, hostEnv: Record<string, string>) => Promise<() => Promise<void>>) {
  describe.skipIf(!CLAUDE_PRESENT)(`Claude Code against a server of both revisions, over ${transport}`, () => {
    let env: BridgeEnv;
    let bridge: BridgeProcess;
    let mock: MockAnthropic;
    let home: string;
    let stop: () => Promise<void> = async () => {};
    const labels: string[] = [];
    let output: Json = {};
    let debugLog = "";

    beforeAll(async () => {
      env = bridgeEnv({ config: { server: { protocol_revisions: ["2025-11-25", MODERN] } } });
      bridge = await startBridgeProcess(env);
      mock = startMockAnthropic(script(labels));
      const host = claudeHostEnv(mock);
      home = host.home;
      stop = await connect(env, host.env);
      const debugFile = join(home, "claude-debug.log");
      const { stdout, stderr, code } = await runToEnd(
        [CLAUDE_BIN, "-p", "--allowedTools", ALLOW, "--output-format", "json", "--debug-file", debugFile, "use the serverfs tools"],
        { cwd: env.workspace, env: host.env, killAfterMs: RUN_MS },
      );
      if (code !== 0) throw new Error(`claude -p exited ${code}: ${stderr.slice(0, 2000)} ${stdout.slice(0, 2000)}`);
      output = JSON.parse(stdout) as Json;
      debugLog = existsSync(debugFile) ? readFileSync(debugFile, "utf8") : "";
    }, RUN_MS + 30_000);

    afterAll(async () => {
      await stop();
      await stopHostRun({ bridge, mock, env, home });
    });

    test("the run ends with the model's last words", () => {
      expect(output["result"]).toBe(FINAL_WORDS);
    });

    test("Claude Code picked 2026-07-28 (its own log says so) and made every call on that connection", () => {
      expect(connection(debugLog)).toMatchObject({ protocolEra: "modern", negotiatedProtocolVersion: MODERN, serverVersion: { name: "ServerFS" } });
      expect(calledTools(debugLog)).toEqual(labels);
    });

    test("the tools answered on 2026-07-28: the workdirs, the file's text and the task's result reached the model", () => {
      const seen = toolResults(mock.requests.at(-1)!);
      expect(seen).toHaveLength(labels.length);
      const at = (i: number) => JSON.parse(seen[i]!.text) as Json;
      expect(at(0)["workdirs"]).toEqual([expect.objectContaining({ alias: "repo" })]);
      expect(at(1)).toMatchObject({ content: "# demo\n", has_more: false });
      expect(at(labels.length - 1)).toMatchObject({ status: "succeeded", final_response: "from-claude-2026" });
    });
  });
}

// the setup docs/hosts.md gives, applied by serverfs itself through `claude mcp add`
claudeOn("stdio", async (env, hostEnv) => {
  const connected = await runCli(["connect", "claude-code", "--write", "--config", env.configPath], { env: hostEnv });
  expect(connected.code).toBe(0);
  return async () => {};
});

// a server the test runs at a URL, added with `claude mcp add --transport http`
claudeOn("Streamable HTTP", async (env, hostEnv) => {
  const server = spawnCli(["mcp", "--config", env.configPath, "--http", "127.0.0.1:0"]);
  const startup = await waitForAuditEvent(server.stderr, "startup", 20_000);
  const url = `http://${String(startup["listen"])}/mcp`;
  const added = await runToEnd([CLAUDE_BIN, "mcp", "add", "--scope", "user", "--transport", "http", SERVER_NAME, url], { cwd: env.workspace, env: hostEnv });
  expect(added.code).toBe(0);
  return async () => {
    server.kill("SIGTERM");
    await server.exited;
  };
});
