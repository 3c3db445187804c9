/**
 * The codex adapter against the real Codex CLI (`codex app-server`), fully offline against the
 * scripted Responses mock (docs/runtimes.md#codex and "Testing the real runtimes offline"; docs/bridge-rpc.md
 * docs/runtimes.md#the-adapter-contract). Each test has its own CODEX_HOME under the checkout's `.tmp/` (Codex refuses the system temp
 * directory) and its own mock.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { chmodSync, rmSync } from "node:fs";
import { join } from "node:path";
import { ServerFsError } from "../../src/shared/errors.ts";
import { newMark, newTaskId } from "../../src/shared/ids.ts";
import { terminateProcessGroup } from "../../src/shared/process-group.ts";
import { type CodexSettings, createCodexAdapter } from "../../src/workers/providers/codex.ts";
import {
  type ApprovalPayload,
  type Decision,
  type NativeFacts,
  NO_CHOICES,
  type Outcome,
  type RunContext,
  type RunHandle,
} from "../../src/workers/providers/types.ts";
import { CODEX_BIN, CODEX_PRESENT, CODEX_VERSION, cliMissing, codexHome } from "../fixtures/agent-stack.ts";
import { type MockOpenAI, type MockStep, startMockOpenAI } from "../fixtures/mock-openai.ts";
import { allEvents, bridgeEnv, call, isTerminalTask, startBridgeProcess, waitForTask } from "../helpers/bridge.ts";
import { poll } from "../helpers/poll.ts";
import { REPO_ROOT, type TempDir, tempDir } from "../helpers/workspace.ts";

const present = CODEX_PRESENT;
const MOCK_ENV = { MOCK_API_KEY: "mock-key" };
const QUICK = { graceMs: 1000, verifyMs: 3000, pollMs: 20 };

if (!present) cliMissing("Codex", CODEX_BIN, `npm install --no-save @openai/codex@${CODEX_VERSION}`);

interface Harness {
  mock: MockOpenAI;
  home: string;
  work: TempDir;
  settings: CodexSettings;
}

const cleanups: (() => Promise<void> | void)[] = [];

function harness(steps: MockStep[], settings: Partial<CodexSettings> = {}): Harness {
  const mock = startMockOpenAI(steps);
  const home = codexHome(mock);
  const work = tempDir("sfs-codex-");
  cleanups.push(() => {
    mock.stop();
    rmSync(home, { recursive: true, force: true });
    work.remove();
  });
  return {
    mock,
    home,
    work,
    settings: {
      enabled: true,
      bin: CODEX_BIN,
      codex_home: home,
      request_timeout_seconds: 10,
      event_idle_timeout_seconds: 0,
      approval_policy: "",
      sandbox: "",
      ...settings,
    },
  };
}

interface Recorded {
  natives: NativeFacts[];
  events: { type: string; payload: Record<string, unknown> }[];
  approvals: ApprovalPayload[];
  started: number;
  handle: RunHandle;
  outcome: Promise<Outcome>;
  mark: string;
}

interface RunOptions {
  decisions?: Decision[];
  continueFrom?: string;
  profile?: RunContext["profile"];
}

function run(h: Harness, prompt: string, o: RunOptions = {}): Recorded {
  const decisions = [...(o.decisions ?? [])];
  const mark = newMark();
  const rec = { natives: [], events: [], approvals: [], started: 0, mark } as unknown as Recorded;
  const ctx: RunContext = {
    taskId: newTaskId(),
    cwd: h.work.path,
    prompt,
    profile: o.profile ?? "workspace-write",
    continueNativeSessionId: o.continueFrom ?? null,
    choices: NO_CHOICES,
    mark,
    env: { ...process.env, ...MOCK_ENV },
    emit: (type, payload) => rec.events.push({ type, payload }),
    async requestApproval(payload) {
      rec.approvals.push(payload);
      return { decision: decisions.shift() ?? "approve_once", granted_permission_ids: [] };
    },
    async askQuestion() {
      throw new ServerFsError("AGENT_INTERACTION_EXPIRED", "the request expired");
    },
    abandonInteraction: () => undefined,
    started: () => {
      rec.started++;
    },
    activity: () => undefined,
    busy: () => undefined,
    async recordNative(facts) {
      rec.natives.push(facts);
    },
  };
  rec.handle = createCodexAdapter(h.settings).start(ctx);
  rec.outcome = rec.handle.outcome;
  cleanups.push(async () => {
    // the finally path: close input, wait, then prove the whole group gone
    await rec.handle.closeAndWait(5000);
    const first = rec.natives[0];
    if (rec.handle.pgid !== null) await terminateProcessGroup(rec.handle.pgid, first?.startTime ?? null, mark, QUICK);
  });
  return rec;
}

/** The outcome, bounded well beyond a 0.1–0.7 s turn. */
async function outcomeOf(r: Recorded, ms = 15_000): Promise<Outcome> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("no outcome in time")), ms);
  });
  try {
    return await Promise.race([r.outcome, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const sessionOf = (r: Recorded): string | undefined => r.natives.find((n) => n.sessionId)?.sessionId;
const types = (r: Recorded): string[] => r.events.map((e) => e.type);

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe.skipIf(!present)("codex probe", () => {
  test("reports the CLI's version and the codex capabilities", async () => {
    const h = harness([]);
    expect(await createCodexAdapter(h.settings).probe()).toEqual({
      name: "codex",
      available: true,
      version: CODEX_VERSION,
      persistent_session: true,
      live_steer: true,
      interactive_approval: true,
      interactive_question: true,
      in_flight_recovery: "session-resume",
    });
    expect(h.mock.requests).toHaveLength(0);
  }, 15_000);

  test("a missing binary is available:false with no version, not an error", async () => {
    const h = harness([], { bin: join(REPO_ROOT, ".tmp", "no-such-codex") });
    expect(await createCodexAdapter(h.settings).probe()).toMatchObject({ name: "codex", available: false, version: null });
  });
});

describe.skipIf(!present)("docs/runtimes.md codex: a turn over app-server", () => {
  test("a plain completion's final text is exactly the agent's final answer", async () => {
    const h = harness([{ say: "hello from the mock", phase: "final_answer" }]);
    const r = run(h, "say hello");
    expect(await outcomeOf(r)).toEqual({ kind: "final", text: "hello from the mock" });
    // group evidence first, before any task input; then the thread and the turn
    expect(r.natives[0]).toEqual({ pgid: r.handle.pgid!, startTime: expect.any(Number) });
    expect(r.natives[1]?.sessionId).toMatch(/\S/);
    expect(r.natives[2]?.turnId).toMatch(/\S/);
    expect(r.started).toBe(1);
    expect(types(r)[0]).toBe("turn.started");
    expect(r.events).toContainEqual({
      type: "item.completed",
      payload: { type: "agentMessage", text: "hello from the mock", phase: "final_answer" },
    });
    // the user's own message is an item with its type only: the prompt never reaches an event
    expect(r.events).toContainEqual({ type: "item.started", payload: { type: "userMessage" } });
    expect(JSON.stringify(r.events)).not.toContain("say hello");
    expect(h.mock.requests).toHaveLength(1);
  }, 20_000);

  test("without a final_answer phase, the final text is the last agent message", async () => {
    const h = harness([{ say: "plain words" }]);
    const r = run(h, "answer plainly");
    expect(await outcomeOf(r)).toEqual({ kind: "final", text: "plain words" });
  }, 20_000);

  test("a provider failure (HTTP 500, no retries) is AGENT_PROVIDER_ERROR with a provider.error event", async () => {
    const h = harness([{ status: 500 }]);
    const r = run(h, "fail please");
    expect(await outcomeOf(r)).toMatchObject({ kind: "failed", code: "AGENT_PROVIDER_ERROR" });
    const errors = r.events.filter((e) => e.type === "provider.error");
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.at(-1)!.payload).toEqual({ message: expect.any(String), will_retry: false });
  }, 20_000);

  test("cancel mid-turn interrupts it: the outcome is cancelled", async () => {
    const h = harness([{ hang: true }]);
    const r = run(h, "take your time");
    await poll(() => types(r).includes("turn.started") && h.mock.requests.length === 1);
    r.handle.cancel();
    expect(await outcomeOf(r)).toEqual({ kind: "cancelled" });
  }, 20_000);

  test("live steering reaches the running turn; after the turn it is AGENT_TASK_NOT_ACTIVE", async () => {
    // a request the steer starts hangs too: with the mock's "done" for it the turn could end before the cancel
    const h = harness([{ hang: true }, { hang: true }, { hang: true }]);
    const r = run(h, "wait for me");
    await poll(() => types(r).includes("turn.started") && h.mock.requests.length === 1);
    await r.handle.sendMessage("a steering message");
    r.handle.cancel();
    expect(await outcomeOf(r)).toEqual({ kind: "cancelled" });
    await expect(r.handle.sendMessage("too late")).rejects.toMatchObject({ code: "AGENT_TASK_NOT_ACTIVE" });
  }, 20_000);
});

describe.skipIf(!present)("docs/runtimes.md codex: approvals (approvalPolicy untrusted)", () => {
  // the command's output, never its text: only a run command can produce it
  const COMMAND = "echo $((12345+54321))";
  const OUTPUT = "66666";
  const outputsSent = (h: Harness): string => JSON.stringify(h.mock.requests.at(-1)?.body["input"] ?? []);

  test("an approved exec_command runs: a command approval, then the output goes to the model", async () => {
    const h = harness([{ exec: COMMAND }, { say: "ran it", phase: "final_answer" }], { approval_policy: "untrusted" });
    const r = run(h, "run the sum", { decisions: ["approve_once"] });
    expect(await outcomeOf(r)).toEqual({ kind: "final", text: "ran it" });
    expect(r.approvals).toHaveLength(1);
    const approval = r.approvals[0]!;
    expect(approval).toMatchObject({ category: "command", title: expect.any(String), relative_cwd: h.work.path });
    expect(approval.command_display).toContain(COMMAND);
    expect(approval.available_decisions).toEqual(expect.arrayContaining(["approve_once", "cancel_task"]));
    expect(approval.available_decisions.every((d) => ["approve_once", "approve_session", "deny", "cancel_task"].includes(d))).toBe(true);
    expect(outputsSent(h)).toContain(OUTPUT);
    expect(r.events).toContainEqual({
      type: "item.completed",
      payload: expect.objectContaining({ type: "commandExecution", status: "completed", exitCode: 0 }),
    });
  }, 20_000);

  test("a denied exec_command does not run and the turn goes on", async () => {
    const h = harness([{ exec: COMMAND }, { say: "not run", phase: "final_answer" }], { approval_policy: "untrusted" });
    const r = run(h, "run the sum", { decisions: ["deny"] });
    expect(await outcomeOf(r)).toEqual({ kind: "final", text: "not run" });
    expect(r.approvals).toHaveLength(1);
    expect(h.mock.requests).toHaveLength(2);
    expect(outputsSent(h)).not.toContain(OUTPUT);
  }, 20_000);

  test("a cancel_task decision ends the turn as cancelled, not as a provider failure", async () => {
    const h = harness([{ exec: "echo never" }, { say: "unreachable" }], { approval_policy: "untrusted" });
    const r = run(h, "run it", { decisions: ["cancel_task"] });
    expect(await outcomeOf(r)).toEqual({ kind: "cancelled" });
    expect(r.approvals).toHaveLength(1);
  }, 20_000);
});

describe.skipIf(!present)("docs/runtimes.md codex: continuation (thread/resume)", () => {
  test("a continuation resumes the thread: same session, and the model sees the earlier history", async () => {
    const h = harness([
      { say: "the first answer", phase: "final_answer" },
      { say: "the second answer", phase: "final_answer" },
    ]);
    const first = run(h, "first prompt");
    expect(await outcomeOf(first)).toEqual({ kind: "final", text: "the first answer" });
    const session = sessionOf(first)!;
    await first.handle.closeAndWait(5000);

    const second = run(h, "second prompt", { continueFrom: session });
    expect(await outcomeOf(second)).toEqual({ kind: "final", text: "the second answer" });
    expect(sessionOf(second)).toBe(session);
    const history = JSON.stringify(h.mock.requests[1]!.body["input"]);
    expect(history).toContain("first prompt");
    expect(history).toContain("the first answer");
    expect(history).toContain("second prompt");
  }, 30_000);

  test("resuming a thread codex does not know is AGENT_SESSION_NOT_RESUMABLE", async () => {
    const h = harness([]);
    const r = run(h, "continue", { continueFrom: "00000000-0000-7000-8000-000000000000" });
    expect(await outcomeOf(r)).toMatchObject({ kind: "failed", code: "AGENT_SESSION_NOT_RESUMABLE" });
    expect(r.started).toBe(0);
    expect(h.mock.requests).toHaveLength(0);
  }, 20_000);
});

describe.skipIf(!present)("docs/runtimes.md codex through the real Bridge", () => {
  test("runtime.list reports codex, and a submitted codex task succeeds with the mock's text", async () => {
    const h = harness([{ say: "done through the bridge", phase: "final_answer" }]);
    const env = bridgeEnv({
      config: { runtimes: { codex: { enabled: true, bin: CODEX_BIN, codex_home: h.home } } },
      workdir: { agent_runtimes: ["codex"] },
    });
    const bridge = await startBridgeProcess(env, MOCK_ENV);
    cleanups.push(async () => {
      await bridge.stop();
      env.dir.remove();
    });
    const { runtimes } = await call<{ runtimes: Record<string, unknown>[] }>(env.socketPath, "runtime.list");
    expect(runtimes.find((r) => r["name"] === "codex")).toMatchObject({ available: true, version: CODEX_VERSION });

    const submitted = await call(env.socketPath, "task.submit", {
      runtime: "codex",
      workdir: "repo",
      path: "",
      profile: "workspace-write",
      prompt: "do it through the bridge",
    });
    const taskId = submitted["task_id"] as string;
    const task = await waitForTask(env.socketPath, taskId, isTerminalTask, 20_000);
    expect(task).toMatchObject({ status: "succeeded", final_response: "done through the bridge" });
    const events = (await allEvents(env.socketPath, taskId)).map((e) => e.event_type);
    expect(events[0]).toBe("task.started");
    expect(events).toContain("turn.started");
    expect(events.at(-1)).toBe("task.completed");
  }, 40_000);

  test("a provider silent past event_idle_timeout_seconds fails the task AGENT_PROVIDER_DISCONNECTED and is stopped", async () => {
    const h = harness([{ hang: true }]);
    const env = bridgeEnv({
      config: { runtimes: { codex: { enabled: true, bin: CODEX_BIN, codex_home: h.home, event_idle_timeout_seconds: 1 } } },
      workdir: { agent_runtimes: ["codex"] },
    });
    const bridge = await startBridgeProcess(env, MOCK_ENV);
    cleanups.push(async () => {
      await bridge.stop();
      env.dir.remove();
    });
    const submitted = await call(env.socketPath, "task.submit", {
      runtime: "codex",
      workdir: "repo",
      path: "",
      profile: "workspace-write",
      prompt: "hang",
    });
    const started = Date.now();
    const task = await waitForTask(env.socketPath, submitted["task_id"] as string, isTerminalTask, 20_000);
    expect(task).toMatchObject({ status: "failed", error_code: "AGENT_PROVIDER_DISCONNECTED" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  }, 40_000);

  test("a provider that writes only to stderr is idle all the same (docs/task-model.md#time-and-clocks)", async () => {
    const h = harness([{ hang: true }]);
    // the real app-server, with a companion in its group writing a line to their shared stderr every 200 ms
    const bin = h.work.file(
      "chatty-codex",
      `#!/bin/sh\nif [ "$1" = app-server ]; then (while :; do echo "stream disconnected - retrying" >&2; sleep 0.2; done) & fi\nexec "${CODEX_BIN}" "$@"\n`,
    );
    chmodSync(bin, 0o755);
    const env = bridgeEnv({
      config: { runtimes: { codex: { enabled: true, bin, codex_home: h.home, event_idle_timeout_seconds: 1 } } },
      workdir: { agent_runtimes: ["codex"] },
    });
    const bridge = await startBridgeProcess(env, MOCK_ENV);
    cleanups.push(async () => {
      await bridge.stop();
      env.dir.remove();
    });
    const submitted = await call(env.socketPath, "task.submit", {
      runtime: "codex",
      workdir: "repo",
      path: "",
      profile: "workspace-write",
      prompt: "hang",
    });
    const task = await waitForTask(env.socketPath, submitted["task_id"] as string, isTerminalTask, 20_000);
    expect(task).toMatchObject({ status: "failed", error_code: "AGENT_PROVIDER_DISCONNECTED" });
  }, 40_000);
});
