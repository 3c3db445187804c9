/**
 * The real Codex (`codex exec`) on MCP revision 2026-07-28 (docs/hosts.md "Tested hosts",
 * docs/protocol.md#hosts): ServerFS serves both revisions (`[server] protocol_revisions`), Codex's
 * `[features] mcp_2026_07_28` is on, and over stdio the server's `env` table also sets
 * `CODEX_MCP_PROTOCOL_VERSION = "2026-07-28"`. On each transport the scripted model lists the
 * workdirs, reads a file, submits an `approval:` task on the `fake` runtime, polls get_agent_task until
 * the approval is pending, approves it with respond_agent_approval (`codex exec` has no human to show a
 * form to), and polls until the task's result is there. The revision each call came in on is the
 * `protocol_version` of the server's `tool_call` audit lines (over stdio, as Codex's own log quotes the
 * server's stderr). Without the env entry, stdio stays on the 2025 era. Without the CLI the file is
 * skipped loudly, except under CI=true, where that is a failure.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CODEX_BIN, CODEX_PRESENT, CODEX_VERSION, cliMissing, codexHome, stopHostRun } from "../fixtures/agent-stack.ts";
import { type MockOpenAI, type MockRequest, type ScriptEntry, startMockOpenAI } from "../fixtures/mock-openai.ts";
import { type BridgeEnv, type BridgeProcess, bridgeEnv, call, startBridgeProcess } from "../helpers/bridge.ts";
import { runCli, spawnCli, waitForAuditEvent } from "../helpers/process.ts";
import { codexExec, NAMESPACE, RUN_MS, toolResults } from "./codex-host.ts";
import { FINAL_WORDS, type SeenResult, submittedTaskId } from "./scenario.ts";

if (!CODEX_PRESENT) cliMissing("Codex", CODEX_BIN, `npm install --no-save @openai/codex@${CODEX_VERSION}`);

const MODERN = "2026-07-28";
const BOTH = { server: { protocol_revisions: ["2025-11-25", MODERN] } };

type Json = Record<string, unknown>;

/** The labels of the calls the model made, in order, and what it saw of each. */
interface Conversation {
  labels: string[];
  seen: SeenResult[];
}

const lastJson = (request: MockRequest): Json => JSON.parse(toolResults(request).at(-1)!.text) as Json;
const taskIdOf = (request: MockRequest): string => submittedTaskId(toolResults(request));

/**
 * The conversation as the mock's script: each step pushes its label when it is made; the polls repeat
 * get_agent_task until the status they wait for.
 */
function script(labels: string[]): ScriptEntry[] {
  const step = (label: string, tool: string, args: (request: MockRequest) => Json) => (request: MockRequest) => {
    labels.push(label);
    return { call: tool, namespace: NAMESPACE, args: args(request) };
  };
  const pollUntil = (label: string, done: (status: string) => boolean) => {
    let asked = false;
    return {
      poll(request: MockRequest) {
        if (asked && done(String(lastJson(request)["status"]))) return null;
        asked = true;
        labels.push(label);
        return { call: "get_agent_task", namespace: NAMESPACE, args: { task_id: taskIdOf(request) } };
      },
    };
  };
  return [
    { toolSearch: "serverfs workdir file agent task approval", limit: 50 },
    step("list_workdirs", "list_workdirs", () => ({})),
    step("read_text_file", "read_text_file", () => ({ workdir: "repo", path: "README.md" })),
    step("submit_agent_task", "submit_agent_task", () => ({ runtime: "fake", workdir: "repo", profile: "review", prompt: "approval:echo from-codex" })),
    pollUntil("get_agent_task_pending", (status) => status === "waiting_for_approval"),
    step("respond_agent_approval", "respond_agent_approval", (request) => {
      const pending = lastJson(request)["pending_request"] as Json;
      return { task_id: taskIdOf(request), request_id: pending["request_id"], decision: "approve_once" };
    }),
    pollUntil("get_agent_task_done", (status) => ["succeeded", "failed", "cancelled", "interrupted"].includes(status)),
    { say: FINAL_WORDS },
  ];
}

/** A CODEX_HOME with the mock provider and the 2026-07-28 feature on. */
function modernCodexHome(mock: MockOpenAI): string {
  const home = codexHome(mock);
  const file = join(home, "config.toml");
  writeFileSync(file, readFileSync(file, "utf8").replace("[features]\n", "[features]\nmcp_2026_07_28 = true\n"));
  return home;
}

/** The `tool_call` audit lines of a serverfs log, also where each is quoted at the end of a line of Codex's log. */
const toolCalls = (log: string): Json[] =>
  log
    .split("\n")
    .map((l) => l.slice(l.indexOf('{"timestamp":')))
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Json)
    .filter((r) => r["event"] === "tool_call");

/** Everything left to read of a stream (one `waitForAuditEvent` already read from). */
async function rest(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (let r = await reader.read(); !r.done; r = await reader.read()) text += decoder.decode(r.value, { stream: true });
  return text;
}

/** What each transport's run must show: every call on 2026-07-28, the tools answered, the approval taken, the result read. */
function expectModernConversation(conversation: () => Conversation, calls: () => Json[], env: () => BridgeEnv) {
  test("every tool call reached ServerFS on revision 2026-07-28", () => {
    const made = calls();
    // in the order the model made them; a poll is one get_agent_task or more, however often it was asked
    const tools = (names: string[]) => names.filter((n, i) => n !== names[i - 1]);
    expect(tools(made.map((c) => String(c["tool"])))).toEqual(tools(conversation().labels.map((l) => l.replace(/_pending$|_done$/, ""))));
    expect(made.length).toBeGreaterThanOrEqual(conversation().labels.length);
    expect(new Set(made.map((c) => c["protocol_version"]))).toEqual(new Set([MODERN]));
  });

  test("the tools answered: the workdir list and the file's text reached the model", () => {
    const { labels, seen } = conversation();
    const at = (label: string) => JSON.parse(seen[labels.indexOf(label)]!.text) as Json;
    expect(at("list_workdirs")["workdirs"]).toEqual([expect.objectContaining({ alias: "repo" })]);
    expect(at("read_text_file")).toMatchObject({ content: "# demo\n", has_more: false });
  });

  test("the approval was answered with respond_agent_approval, and the task's result came back to the model", async () => {
    const { labels, seen } = conversation();
    const at = (label: string) => JSON.parse(seen[labels.lastIndexOf(label)]!.text) as Json;
    expect(at("get_agent_task_pending")).toMatchObject({ status: "waiting_for_approval", pending_request: { kind: "approval" } });
    expect(seen[labels.indexOf("respond_agent_approval")]!.isError).toBe(false);
    const done = at("get_agent_task_done");
    expect(done).toMatchObject({ status: "succeeded", final_response: "approval=approve_once" });
    const events = await call<{ events: Json[] }>(env().socketPath, "task.events", { task_id: done["task_id"], after_event_id: 0, limit: 100 });
    const resolved = events.events.find((e) => e["event_type"] === "approval.resolved");
    expect((resolved?.["payload"] as Json | undefined)?.["decision"]).toBe("approve_once");
  });
}

/**
 * One Codex run on revision 2026-07-28 (a Bridge, the mock model server, a Codex home of its own), wired
 * to ServerFS by `run`, which answers Codex's last words and the stderr that holds ServerFS's audit lines;
 * then what every such run must show.
 */
function describeModernRun(title: string, run: (env: BridgeEnv, home: string) => Promise<{ final: string; log: string }>) {
  describe.skipIf(!CODEX_PRESENT)(title, () => {
    let env: BridgeEnv;
    let bridge: BridgeProcess;
    let mock: MockOpenAI;
    let home: string;
    const labels: string[] = [];
    let seen: SeenResult[] = [];
    let log = "";
    let final = "";

    beforeAll(async () => {
      env = bridgeEnv({ config: BOTH });
      bridge = await startBridgeProcess(env);
      mock = startMockOpenAI(script(labels));
      home = modernCodexHome(mock);
      ({ final, log } = await run(env, home));
      seen = toolResults(mock.requests.at(-1)!);
    }, RUN_MS + 30_000);

    afterAll(() => stopHostRun({ bridge, mock, env, home }));

    test("the run ends with the model's last words", () => {
      expect(final).toBe(FINAL_WORDS);
      expect(seen).toHaveLength(labels.length);
    });

    expectModernConversation(
      () => ({ labels, seen }),
      () => toolCalls(log),
      () => env,
    );
  });
}

describeModernRun("Codex with mcp_2026_07_28 over Streamable HTTP", async (env, home) => {
  const server = spawnCli(["mcp", "--config", env.configPath, "--http", "127.0.0.1:0"]);
  let final: string;
  try {
    const startup = await waitForAuditEvent(server.stderr, "startup", 20_000);
    // Codex's table for a server at a URL (serverfs connect writes the stdio one)
    appendFileSync(
      join(home, "config.toml"),
      `\n[mcp_servers.serverfs]\nurl = "http://${String(startup["listen"])}/mcp"\ndefault_tools_approval_mode = "approve"\n`,
    );
    final = (await codexExec(CODEX_BIN, home, env.workspace)).final;
  } finally {
    server.kill("SIGTERM");
  }
  const log = await rest(server.stderr);
  await server.exited;
  return { final, log };
});

describeModernRun("Codex with mcp_2026_07_28 and CODEX_MCP_PROTOCOL_VERSION over stdio", async (env, home) => {
  const connected = await runCli(["connect", "codex", "--write", "--auto-approve", "--config", env.configPath], { env: { CODEX_HOME: home } });
  expect(connected.code).toBe(0);
  appendFileSync(join(home, "config.toml"), `\n[mcp_servers.serverfs.env]\nCODEX_MCP_PROTOCOL_VERSION = "${MODERN}"\n`);
  // Codex logs each stderr line of a stdio server it runs at INFO: ServerFS's audit lines, there
  const run = await codexExec(CODEX_BIN, home, env.workspace, { RUST_LOG: "codex_rmcp_client=info" });
  return { final: run.final, log: run.stderr };
});

describe.skipIf(!CODEX_PRESENT)("Codex with mcp_2026_07_28 over stdio without CODEX_MCP_PROTOCOL_VERSION", () => {
  test(
    "stays on the 2025 era: initialize negotiates 2025-06-18 although the server serves 2026-07-28",
    async () => {
      const env = bridgeEnv({ config: BOTH });
      const mock = startMockOpenAI([
        { toolSearch: "serverfs workdir", limit: 50 },
        { call: "list_workdirs", namespace: NAMESPACE, args: {} },
        { say: FINAL_WORDS },
      ]);
      const home = modernCodexHome(mock);
      try {
        const connected = await runCli(["connect", "codex", "--write", "--auto-approve", "--config", env.configPath], { env: { CODEX_HOME: home } });
        expect(connected.code).toBe(0);
        const run = await codexExec(CODEX_BIN, home, env.workspace, { RUST_LOG: "codex_rmcp_client=info" });
        expect(run.final).toBe(FINAL_WORDS);
        expect(toolCalls(run.stderr).map((c) => [c["tool"], c["protocol_version"]])).toEqual([["list_workdirs", "2025-06-18"]]);
      } finally {
        await stopHostRun({ mock, env, home });
      }
    },
    RUN_MS + 30_000,
  );
});
