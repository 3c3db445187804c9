/**
 * The claude adapter against the real Claude Code CLI, offline (docs/runtimes.md#claude and "Testing the
 * real runtimes offline"; docs/runtimes.md): the native binary talks to the scripted mock of
 * test/fixtures/mock-anthropic.ts, driven through a test RunContext, plus one task through the real
 * Bridge. Without the CLI the file is skipped loudly, except under CI=true, where that is a failure.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { newMark, newTaskId } from "../../src/shared/ids.ts";
import { terminateProcessGroup } from "../../src/shared/process-group.ts";
import { createClaudeAdapter } from "../../src/workers/providers/claude.ts";
import {
  type ApprovalPayload,
  type Decision,
  type NativeFacts,
  NO_CHOICES,
  type Outcome,
  type QuestionPayload,
  type QuestionResolution,
  type RunContext,
  type RunHandle,
} from "../../src/workers/providers/types.ts";
import { CLAUDE_BIN, CLAUDE_PACKAGE, CLAUDE_PRESENT, claudeOfflineEnv, cliMissing, claudeHome as freshClaudeHome } from "../fixtures/agent-stack.ts";
import { ASK_COLOUR, type MockAnthropic, type MockRequest, type MockStep, startMockAnthropic } from "../fixtures/mock-anthropic.ts";
import { bridgeEnv, call, isTerminalTask, startBridgeProcess, waitForTask } from "../helpers/bridge.ts";
import { poll } from "../helpers/poll.ts";
import { singleQuestion } from "../helpers/questions.ts";
import { REPO_ROOT, type TempDir, tempDir } from "../helpers/workspace.ts";

const PACKAGE = CLAUDE_PACKAGE;
const BIN = CLAUDE_BIN;
const PRESENT = CLAUDE_PRESENT;
const RUN_MS = 30_000;

if (!PRESENT) cliMissing("Claude Code", BIN, "npm install --no-save @anthropic-ai/claude-code@2.1.332");

/** Per-test HOME and CLAUDE_CONFIG_DIR under the gitignored .tmp/, removed after each test. */
const homes: string[] = [];
function claudeHome(): { home: string; configDir: string } {
  const made = freshClaudeHome();
  homes.push(made.home);
  return made;
}

interface Recorded {
  taskId: string;
  order: string[];
  natives: NativeFacts[];
  events: { type: string; payload: Record<string, unknown> }[];
  approvals: ApprovalPayload[];
  questions: QuestionPayload[];
  handle: RunHandle;
  outcome: Promise<Outcome>;
  /** Proves the run's process group gone, the way the finally path does. */
  finish(): Promise<void>;
}

interface RunOptions {
  continueFrom?: string | null;
  decisions?: Decision[];
  answer?: QuestionResolution;
}

const QUICK = { graceMs: 1000, verifyMs: 3000, pollMs: 20 };
const mocks: MockAnthropic[] = [];
const dirs: TempDir[] = [];
const handles: RunHandle[] = [];

afterEach(async () => {
  for (const h of handles.splice(0)) {
    h.cancel();
    await h.closeAndWait(5000);
  }
  for (const m of mocks.splice(0)) m.stop();
  for (const d of dirs.splice(0)) d.remove();
  for (const h of homes.splice(0)) rmSync(h, { recursive: true, force: true });
});

/** A fresh mock, home and workspace for one test. */
function setup(steps: MockStep[]) {
  const mock = startMockAnthropic(steps);
  mocks.push(mock);
  const { home, configDir } = claudeHome();
  const ws = tempDir("sfs-claude-ws-");
  dirs.push(ws);
  return { mock, ws, env: claudeOfflineEnv(mock, home, configDir), configDir };
}

function run(s: ReturnType<typeof setup>, prompt: string, o: RunOptions = {}): Recorded {
  const taskId = newTaskId();
  const mark = newMark();
  const decisions = [...(o.decisions ?? [])];
  const rec = { taskId, order: [] as string[], natives: [] as NativeFacts[], events: [] as Recorded["events"] };
  const approvals: ApprovalPayload[] = [];
  const questions: QuestionPayload[] = [];
  const ctx: RunContext = {
    taskId,
    cwd: s.ws.path,
    prompt,
    profile: "workspace-write",
    continueNativeSessionId: o.continueFrom ?? null,
    choices: NO_CHOICES,
    mark,
    env: { PATH: process.env["PATH"], ...s.env },
    emit(type, payload) {
      rec.order.push(type);
      rec.events.push({ type, payload });
    },
    async requestApproval(payload) {
      rec.order.push("approval");
      approvals.push(payload);
      return { decision: decisions.shift() ?? "deny", granted_permission_ids: [] };
    },
    async askQuestion(payload) {
      rec.order.push("question");
      questions.push(payload);
      if (!o.answer) throw new Error("no answer scripted");
      return o.answer;
    },
    abandonInteraction() {
      rec.order.push("abandon");
    },
    started() {
      rec.order.push("started");
    },
    activity: () => undefined,
    busy: () => undefined,
    async recordNative(facts) {
      rec.order.push("native");
      rec.natives.push(facts);
    },
  };
  const adapter = createClaudeAdapter({ bin: BIN, config_dir: "", probe_timeout_seconds: 5 });
  const handle = adapter.start(ctx);
  handles.push(handle);
  return {
    ...rec,
    approvals,
    questions,
    handle,
    outcome: bounded(handle.outcome),
    async finish() {
      expect(await handle.closeAndWait(10_000)).toBe(true);
      const startTime = rec.natives[0]?.startTime ?? null;
      expect((await terminateProcessGroup(handle.pgid, startTime, mark, QUICK)).proven).toBe(true);
    },
  };
}

function bounded<T>(p: Promise<T>, ms = RUN_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no outcome within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Every text part of a request's messages, flattened: what the model was shown. */
function transcript(messages: { role: string; content: unknown }[]): { role: string; text: string }[] {
  const out: { role: string; text: string }[] = [];
  for (const m of messages) {
    const parts = typeof m.content === "string" ? [{ type: "text", text: m.content }] : (m.content as Record<string, unknown>[]);
    for (const p of parts) {
      if (typeof p["text"] === "string") out.push({ role: m.role, text: p["text"] });
      if (p["type"] === "tool_result") out.push({ role: m.role, text: `tool_result:${JSON.stringify(p["content"])}:${String(p["is_error"])}` });
    }
  }
  return out;
}

/** The newest user text of a request (the CLI appends its own context after it, in other roles). */
const lastUserText = (request: MockRequest): string | undefined =>
  transcript(request.messages)
    .filter((t) => t.role === "user")
    .at(-1)?.text;

const sessionOf = (r: Recorded): string | undefined => r.natives.find((n) => n.sessionId !== undefined)?.sessionId;

describe.skipIf(!PRESENT)("runtime.list entry for claude", () => {
  test("probe reports the CLI's N.N.N version and live_steer false", async () => {
    const version = (JSON.parse(readFileSync(join(PACKAGE, "package.json"), "utf8")) as { version: string }).version;
    expect(await createClaudeAdapter({ bin: BIN, config_dir: "", probe_timeout_seconds: 5 }).probe()).toEqual({
      name: "claude",
      available: true,
      version,
      persistent_session: true,
      live_steer: false,
      interactive_approval: true,
      interactive_question: true,
      in_flight_recovery: "session-resume",
    });
  });

  test("a missing binary is available: false with a null version, not an error", async () => {
    const info = await createClaudeAdapter({ bin: join(REPO_ROOT, ".tmp", "no-such-claude"), config_dir: "", probe_timeout_seconds: 5 }).probe();
    expect(info).toMatchObject({ name: "claude", available: false, version: null });
  });

  test("a --version that outlives probe_timeout_seconds is available: false, on time", async () => {
    const ws = tempDir("sfs-claude-probe-");
    dirs.push(ws);
    const SLOW_MS = 30_000;
    const slow = ws.file("slow-claude", `#!/bin/sh\nexec sleep ${SLOW_MS / 1000}\n`);
    chmodSync(slow, 0o755);
    const began = Date.now();
    const info = await createClaudeAdapter({ bin: slow, config_dir: "", probe_timeout_seconds: 1 }).probe();
    expect(info).toMatchObject({ available: false, version: null });
    // ended by its 1 s bound, long before the binary would have answered
    expect(Date.now() - began).toBeLessThan(SLOW_MS / 2);
  }, 30_000);
});

describe.skipIf(!PRESENT)("docs/runtimes.md claude: a plain turn", () => {
  test("the final text is the result's exact text; pgid/startTime are recorded before the prompt, then the session id", async () => {
    const s = setup([{ say: "Hello from the mock: ünïcode ✓" }]);
    const r = run(s, "say hello");
    expect(await r.outcome).toEqual({ kind: "final", text: "Hello from the mock: ünïcode ✓" });
    expect(r.order.slice(0, 2)).toEqual(["native", "started"]);
    expect(Object.keys(r.natives[0]!).sort()).toEqual(["pgid", "startTime"]);
    expect(r.natives[0]!.pgid).toBe(r.handle.pgid!);
    expect(sessionOf(r)).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.events).toContainEqual({ type: "agent.message", payload: { text: "Hello from the mock: ünïcode ✓" } });
    // the prompt reached the model as the user's turn
    expect(lastUserText(s.mock.requests[0]!)).toBe("say hello");
    await r.finish();
  }, 40_000);

  test("sendMessage is AGENT_PROVIDER_ERROR: live steering is not supported", async () => {
    const s = setup([{ say: "done" }]);
    const r = run(s, "x");
    await expect(r.handle.sendMessage("more")).rejects.toMatchObject({
      code: "AGENT_PROVIDER_ERROR",
      message: "live steering is not supported by this runtime",
    });
    expect(await r.outcome).toEqual({ kind: "final", text: "done" });
    await r.finish();
  }, 40_000);

  test("an HTTP error from the model API ends the run with AGENT_PROVIDER_ERROR, message from the result", async () => {
    const s = setup([{ httpError: 500, message: "mock refuses this request" }]);
    const r = run(s, "x");
    const outcome = await r.outcome;
    expect(outcome).toMatchObject({ kind: "failed", code: "AGENT_PROVIDER_ERROR" });
    expect(outcome.kind === "failed" && outcome.message).toContain("500 mock refuses this request");
    expect(s.mock.requests).toHaveLength(1);
    await r.finish();
  }, 40_000);
});

describe.skipIf(!PRESENT)("docs/runtimes.md claude: can_use_tool approvals", () => {
  const touch = (): MockStep => ({ tool: "Bash", input: { command: "touch made.txt", description: "Create a file" } });

  test("an allowed Bash command runs: command approval with command_display and the blocked_path made absolute (the worker redacts it)", async () => {
    const s = setup([touch(), { say: "made it" }]);
    const r = run(s, "make a file", { decisions: ["approve_once"] });
    expect(await r.outcome).toEqual({ kind: "final", text: "made it" });
    expect(r.approvals).toHaveLength(1);
    expect(r.approvals[0]).toMatchObject({
      category: "command",
      tool: "Bash",
      command_display: "touch made.txt",
      blocked_path: join(s.ws.path, "made.txt"),
    });
    expect(r.approvals[0]!.available_decisions).toContain("approve_once");
    expect(existsSync(join(s.ws.path, "made.txt"))).toBe(true);
    const types = r.events.map((e) => e.type);
    expect(types.indexOf("command.started")).toBeLessThan(types.indexOf("tool.completed"));
    expect(r.events).toContainEqual({ type: "command.started", payload: { command: "touch made.txt" } });
    expect(r.events).toContainEqual({ type: "tool.completed", payload: { tool: "Bash", is_error: false } });
    await r.finish();
  }, 40_000);

  test("a denied Bash command does not run and the model is told it was denied", async () => {
    const s = setup([touch(), { say: "understood" }]);
    const r = run(s, "make a file", { decisions: ["deny"] });
    expect(await r.outcome).toEqual({ kind: "final", text: "understood" });
    expect(existsSync(join(s.ws.path, "made.txt"))).toBe(false);
    expect(r.events).toContainEqual({
      type: "tool.completed",
      payload: { tool: "Bash", is_error: true, error: expect.stringContaining("Denied by the remote user") },
    });
    const seen = transcript(s.mock.requests[1]!.messages).map((t) => t.text);
    expect(seen.some((t) => t.startsWith("tool_result:") && t.includes("Denied by the remote user") && t.endsWith(":true"))).toBe(true);
    await r.finish();
  }, 40_000);

  test("a Write is a file_change approval naming the file and proposing its content (the Bridge makes the diff)", async () => {
    const s = setup([]);
    const target = join(s.ws.path, "notes.txt");
    s.mock.script([{ tool: "Write", input: { file_path: target, content: "secret contents" } }, { say: "written" }]);
    const r = run(s, "write notes", { decisions: ["approve_once"] });
    expect(await r.outcome).toEqual({ kind: "final", text: "written" });
    expect(r.approvals).toHaveLength(1);
    expect(r.approvals[0]).toMatchObject({ category: "file_change", tool: "Write", file_changes: [{ path: target, change: { write: "secret contents" } }] });
    expect(r.approvals[0]).not.toHaveProperty("tool_input");
    expect(readFileSync(target, "utf8")).toBe("secret contents");
    expect(r.events).toContainEqual({ type: "file_change.started", payload: { tool: "Write", paths: [target] } });
    expect(r.events).toContainEqual({ type: "tool.completed", payload: { tool: "Write", is_error: false } });
    await r.finish();
  }, 40_000);

  test("approve_session is offered with session suggestions and grants exactly them: a later edit needs no approval", async () => {
    const s = setup([]);
    const target = join(s.ws.path, "later.txt");
    s.mock.script([touch(), { tool: "Write", input: { file_path: target, content: "later" } }, { say: "both done" }]);
    const r = run(s, "two steps", { decisions: ["approve_session"] });
    expect(await r.outcome).toEqual({ kind: "final", text: "both done" });
    expect(r.approvals).toHaveLength(1);
    expect(r.approvals[0]!.available_decisions).toEqual(["approve_once", "approve_session", "deny", "cancel_task"]);
    expect(existsSync(join(s.ws.path, "made.txt"))).toBe(true);
    expect(readFileSync(target, "utf8")).toBe("later");
    await r.finish();
  }, 40_000);

  test("cancel_task denies with interrupt: the tool does not run and the run ends cancelled", async () => {
    const s = setup([touch(), { say: "should not be reached" }]);
    const r = run(s, "make a file", { decisions: ["cancel_task"] });
    expect(await r.outcome).toEqual({ kind: "cancelled" });
    expect(existsSync(join(s.ws.path, "made.txt"))).toBe(false);
    expect(s.mock.requests).toHaveLength(1);
    await r.finish();
  }, 40_000);

  test("AskUserQuestion is a question (q0, option ids = labels, free text) and the answer reaches the tool", async () => {
    const s = setup([ASK_COLOUR, { say: "blue it is" }]);
    const r = run(s, "ask me", { answer: { answers: [{ question_id: "q0", selected_option_ids: ["blue"] }] } });
    expect(await r.outcome).toEqual({ kind: "final", text: "blue it is" });
    expect(r.questions).toEqual([
      singleQuestion("q0", "Which colour?", [
        { option_id: "red", label: "red", description: "warm" },
        { option_id: "blue", label: "blue", description: "cool" },
      ]),
    ]);
    expect(r.approvals).toHaveLength(0);
    const seen = transcript(s.mock.requests[1]!.messages).map((t) => t.text);
    expect(seen.some((t) => t.startsWith("tool_result:") && t.includes("blue"))).toBe(true);
    await r.finish();
  }, 40_000);
});

describe.skipIf(!PRESENT)("docs/runtimes.md claude: cancel and continuation", () => {
  test("cancel mid-turn (the model hangs) ends the run cancelled and the group exits", async () => {
    const s = setup([{ hang: true }]);
    const r = run(s, "think forever");
    await poll(() => s.mock.requests.length > 0);
    r.handle.cancel();
    expect(await r.outcome).toEqual({ kind: "cancelled" });
    await r.finish();
  }, 40_000);

  test("a continuation resumes the session with --resume: the model sees the earlier turn replayed", async () => {
    const s = setup([{ say: "the first answer" }, { say: "the second answer" }]);
    const first = run(s, "the first question");
    expect(await first.outcome).toEqual({ kind: "final", text: "the first answer" });
    await first.finish();
    const session = sessionOf(first)!;
    const second = run(s, "the second question", { continueFrom: session });
    expect(await second.outcome).toEqual({ kind: "final", text: "the second answer" });
    expect(sessionOf(second)).toBe(session);
    const seen = transcript(s.mock.requests[1]!.messages);
    const texts = seen.map((t) => `${t.role}:${t.text}`);
    expect(texts).toContain("user:the first question");
    expect(texts).toContain("assistant:the first answer");
    expect(lastUserText(s.mock.requests[1]!)).toBe("the second question");
    await second.finish();
  }, 60_000);

  test("resuming a session the CLI does not have is AGENT_SESSION_NOT_RESUMABLE", async () => {
    const s = setup([{ say: "never" }]);
    const r = run(s, "x", { continueFrom: "00000000-0000-4000-8000-000000000000" });
    expect(await r.outcome).toMatchObject({ kind: "failed", code: "AGENT_SESSION_NOT_RESUMABLE" });
    await r.finish();
  }, 40_000);
});

describe.skipIf(!PRESENT)("a claude task through the real Bridge", () => {
  let bridge: Awaited<ReturnType<typeof startBridgeProcess>> | undefined;
  afterAll(async () => {
    await bridge?.stop();
  });

  test("submit on a workspace-write workdir → succeeded with the mock's text", async () => {
    const s = setup([{ say: "bridged answer" }]);
    const env = bridgeEnv({
      config: { runtimes: { claude: { enabled: true, bin: BIN, config_dir: s.configDir } } },
      workdir: { agent_runtimes: ["claude"] },
    });
    dirs.push(env.dir);
    bridge = await startBridgeProcess(env, s.env);
    const listed = await call<{ runtimes: Record<string, unknown>[] }>(env.socketPath, "runtime.list");
    expect(listed.runtimes.find((r) => r["name"] === "claude")).toMatchObject({ available: true, live_steer: false });
    const submitted = await call(env.socketPath, "task.submit", {
      runtime: "claude",
      workdir: "repo",
      path: "",
      profile: "workspace-write",
      prompt: "answer through the bridge",
    });
    const task = await waitForTask(env.socketPath, String(submitted["task_id"]), isTerminalTask, 40_000);
    expect(task).toMatchObject({ status: "succeeded", runtime: "claude", final_response: "bridged answer" });
    expect(lastUserText(s.mock.requests[0]!)).toBe("answer through the bridge");
    await bridge.stop();
    bridge = undefined;
  }, 60_000);
});
