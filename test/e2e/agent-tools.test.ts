/**
 * The nine Agent tools end to end (docs/mcp-tools.md#agent-tools, docs/mcp-tools.md#audit-log; docs/bridge-rpc.md): a real `serverfs bridge` with
 * the scripted fake runtime, and `serverfs mcp` over stdio driven by the SDK's Client — once more
 * over Streamable HTTP. One Bridge and one MCP server serve the whole file; the tests run in order,
 * and the last ones stop the Bridge and scan both processes' logs for what must never be there.
 *
 * Most tasks run as `review` (no writer lease), so that one test's finally path never makes the next
 * test's submission see WORKDIR_BUSY; the lease itself is test/e2e/lease.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { canonicalJson } from "../../src/shared/canonical-json.ts";
import { type BridgeEnv, type BridgeProcess, bridgeEnv, startBridgeProcess, treeTables } from "../helpers/bridge.ts";
import { FAKE_RUNTIME_LISTED } from "../helpers/contract-shapes.ts";
import { errorCode, type McpSession, startStdio, structured } from "../helpers/mcp-client.ts";
import { AGENT_TOOLS } from "../helpers/tool-names.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";
import { allEvents, code, deepKeys, eventually, hasStatus, isTerminal, type Json, ok, recording, startHttp, submit, waitForTask } from "./support.ts";

/** Every canary carries this marker; it must never reach a log. Correlation ids and keys are logged, so they never carry it. */
const MARKER = `cnry${randomBytes(6).toString("hex")}`;
const CANARY = {
  final: `${MARKER}-final-response`,
  approval: `${MARKER}-approval-command`,
  question: `${MARKER}-question-prompt`,
  answer: `${MARKER}-answer-text`,
  steer: `${MARKER}-steering-message`,
  failure: `${MARKER}-provider-failure`,
  spooled: `${MARKER}-spooled ✓ 多字节 `,
  providerFile: `${MARKER}-written-by-the-provider`,
  clientFile: `${MARKER}-written-by-the-client`,
  idempotent: `${MARKER}-idempotent-prompt`,
  http: `${MARKER}-over-http`,
};

/** Units of CANARY.spooled in the spooled result: about 470 KB, over the 256 KiB inline limit. */
const SPOOL_UNITS = 12_000;
const NO_SUCH_TASK = `agt_${"0".repeat(24)}`;
const NO_SUCH_REQUEST = `req_${"0".repeat(24)}`;
const sha256 = (s: string) => createHash("sha256").update(s, "utf8").digest("hex");
const bytes = (s: string) => Buffer.byteLength(s, "utf8");

let env: BridgeEnv;
let extra: TempDir;
let bridge: BridgeProcess;
let bridgeLog = "";
let stdio: McpSession;
let mcp: ReturnType<typeof recording>;
const httpLogs: string[] = [];

const review = (args: Json) => submit(mcp, { profile: "review", ...args });

beforeAll(async () => {
  extra = tempDir("sfs-w-");
  env = bridgeEnv({
    extraWorkdirs: [
      { slot: 2, alias: "docs", path: extra.dir("docs"), read_only: true },
      { slot: 3, alias: "rev", path: extra.dir("rev"), agent_mode: "review", agent_runtimes: ["fake"] },
    ],
  });
  env.dir.dir("ws/src/deep");
  env.dir.dir("ws/notes");
  symlinkSync("src", `${env.workspace}/link`);
  bridge = await startBridgeProcess(env);
  stdio = await startStdio(env.configPath);
  mcp = recording(stdio);
});

afterAll(async () => {
  await stdio?.close();
  if (bridge && bridge.proc.exitCode === null) await bridge.stop("SIGKILL");
  env?.dir.remove();
  extra?.remove();
});

describe("list_agent_runtimes", () => {
  test("lists the fake runtime with its probe: version 1, every capability, session-resume", async () => {
    const r = await ok<{ runtimes: Json[] }>(mcp, "list_agent_runtimes");
    expect(r.runtimes).toEqual([FAKE_RUNTIME_LISTED]);
  });
});

describe("submit_agent_task, get_agent_task, read_agent_task_events", () => {
  let taskId: string;

  test("submit answers queued at once; the task succeeds with its final response inline", async () => {
    const submitted = await ok(mcp, "submit_agent_task", {
      runtime: "fake",
      workdir: "repo",
      prompt: `complete:${CANARY.final}`,
      profile: "review",
      correlation_id: "corr-basic",
    });
    expect(submitted).toEqual({ task_id: expect.stringMatching(/^agt_[0-9a-f]{24}$/), status: "queued", correlation_id: "corr-basic", idempotency_key: null });
    taskId = submitted["task_id"] as string;
    const task = await waitForTask(mcp, taskId, isTerminal);
    expect(task).toMatchObject({
      task_id: taskId,
      runtime: "fake",
      profile: "review",
      workdir_alias: "repo",
      workdir_slot: 1,
      relative_cwd: "",
      status: "succeeded",
      continue_from_task_id: null,
      correlation_id: "corr-basic",
      idempotency_key: null,
      final_response: CANARY.final,
      final_response_truncated: false,
      result: { storage: "inline", size_bytes: bytes(CANARY.final), sha256: sha256(CANARY.final), retrievable: false },
      error_code: null,
      error_message: null,
      pending_request_id: null,
      pending_request: null,
    });
    for (const k of ["created_at", "updated_at", "started_at", "completed_at", "deadline_at"]) {
      expect({ field: k, value: task[k] }).toEqual({ field: k, value: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) });
    }
  });

  test("the manifest is the Bridge's immutable record, and manifest_sha256 is the SHA-256 of its canonical JSON", async () => {
    const task = await ok(mcp, "get_agent_task", { task_id: taskId });
    const manifest = task["manifest"] as Json;
    expect(task["manifest_sha256"]).toBe(sha256(canonicalJson(manifest)));
    expect(manifest).toMatchObject({
      schema_version: 1,
      protocol_version: 1,
      runtime: { name: "fake", version: "1" },
      workspace: { alias: "repo", slot: 1, relative_cwd: "", profile: "review" },
      correlation_id: "corr-basic",
    });
    expect(JSON.stringify(manifest)).not.toContain(env.dir.path);
  });

  test("events come in ascending event_id with envelope schema 1, and the cursor is exclusive", async () => {
    const events = await allEvents(mcp, taskId);
    const types = events.map((e) => e["event_type"]);
    expect(types).toContain("task.started");
    expect(types.at(-1)).toBe("task.completed");
    for (const e of events) {
      expect(Object.keys(e).sort()).toEqual(["correlation_id", "created_at", "event_id", "event_type", "payload", "schema_version", "task_id"]);
      expect(e).toMatchObject({ schema_version: 1, task_id: taskId, correlation_id: "corr-basic" });
    }
    const ids = events.map((e) => e["event_id"] as number);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    expect(events.at(-1)!["payload"]).toEqual({ result_storage: "inline", result_size_bytes: bytes(CANARY.final) });

    // one at a time, passing next_after_event_id back, gives the same events, no repeat, no gap
    const paged: Json[] = [];
    let cursor = 0;
    for (;;) {
      const page = await ok<{ events: Json[]; next_after_event_id: number; correlation_id: string }>(mcp, "read_agent_task_events", {
        task_id: taskId,
        after_event_id: cursor,
        limit: 1,
      });
      expect(page.correlation_id).toBe("corr-basic");
      if (page.events.length === 0) {
        expect(page.next_after_event_id).toBe(cursor);
        break;
      }
      expect(page.next_after_event_id).toBe(page.events[0]!["event_id"] as number);
      paged.push(...page.events);
      cursor = page.next_after_event_id;
    }
    expect(paged).toEqual(events);
  });

  test("wait_ms on a terminal task returns at once", async () => {
    const events = await allEvents(mcp, taskId);
    const last = events.at(-1)!["event_id"] as number;
    const WAIT_MS = 20_000;
    const t0 = performance.now();
    const page = await ok(mcp, "read_agent_task_events", { task_id: taskId, after_event_id: last, wait_ms: WAIT_MS });
    // a small part of the wait it would have had on a live task
    expect(performance.now() - t0).toBeLessThan(WAIT_MS / 4);
    expect(page).toMatchObject({ events: [], next_after_event_id: last });
  });
});

describe("wait_ms and send_agent_message (steer)", () => {
  let taskId: string;
  let cursor: number;

  test("on a live task with nothing new, wait_ms expires with events [] and the cursor unchanged", async () => {
    taskId = await review({ prompt: "steer:", correlation_id: "corr-steer" });
    await waitForTask(mcp, taskId, hasStatus("running"));
    cursor = ((await allEvents(mcp, taskId)).at(-1)?.["event_id"] as number | undefined) ?? 0;
    const t0 = performance.now();
    const page = await ok(mcp, "read_agent_task_events", { task_id: taskId, after_event_id: cursor, wait_ms: 400 });
    const waited = performance.now() - t0;
    // an empty page comes only when the wait expired (an event would end it with that event)
    expect(page).toMatchObject({ events: [], next_after_event_id: cursor });
    expect(waited).toBeGreaterThanOrEqual(350);
  });

  test("a waiting read returns as soon as an event is appended, long before wait_ms", async () => {
    const WAIT_MS = 25_000;
    const t0 = performance.now();
    const waiting = mcp.call("read_agent_task_events", { task_id: taskId, after_event_id: cursor, wait_ms: WAIT_MS });
    // not synchronization: the read answers the same if the message comes first; the pause makes it
    // come while the read is waiting, the case under test
    await Bun.sleep(300);
    const sent = await ok(mcp, "send_agent_message", { task_id: taskId, message: CANARY.steer });
    expect(sent).toEqual({ task_id: taskId, accepted: true, correlation_id: "corr-steer" });
    const page = structured<{ events: Json[] }>(await waiting);
    const waited = performance.now() - t0;
    expect(waited).toBeGreaterThanOrEqual(250);
    expect(waited).toBeLessThan(WAIT_MS / 2);
    expect(page.events.map((e) => e["event_type"])).toContain("user.message");
    const message = (await allEvents(mcp, taskId)).find((e) => e["event_type"] === "user.message");
    // the steering event carries only the message's byte count
    expect(message?.["payload"]).toEqual({ bytes: bytes(CANARY.steer) });
  });

  test("the steered task ends with the message in its final response; a terminal task refuses steering", async () => {
    const task = await waitForTask(mcp, taskId, isTerminal);
    expect(task["status"]).toBe("succeeded");
    expect(task["final_response"]).toBe(`steered=${CANARY.steer}`);
    expect(await code(mcp, "send_agent_message", { task_id: taskId, message: "again" })).toBe("AGENT_TASK_TERMINAL");
  });
});

describe("respond_agent_approval", () => {
  async function pendingApproval(correlationId: string | null = null, prompt = `approval:${CANARY.approval}`) {
    const taskId = await review({ prompt, ...(correlationId ? { correlation_id: correlationId } : {}) });
    const task = await waitForTask(mcp, taskId, hasStatus("waiting_for_approval"));
    return { taskId, task, request: task["pending_request"] as Json };
  }

  test("an approval is a pending request with its payload; approve_once resolves it and the task goes on", async () => {
    const { taskId, task, request } = await pendingApproval("corr-approval");
    expect(task["pending_request_id"]).toBe(request["request_id"]);
    // a copy: bun's toMatchObject writes its asymmetric matchers into the object it checks
    expect(structuredClone(request)).toMatchObject({
      request_id: expect.stringMatching(/^req_[0-9a-f]{24}$/),
      task_id: taskId,
      kind: "approval",
      status: "pending",
      payload: { category: "command", command_display: CANARY.approval, title: expect.any(String) },
      resolved_at: null,
      resolution: null,
    });
    expect(String(request["expires_at"]) <= String(task["deadline_at"])).toBe(true);
    const r = await ok(mcp, "respond_agent_approval", { task_id: taskId, request_id: request["request_id"], decision: "approve_once" });
    expect(r).toEqual({ task_id: taskId, request_id: request["request_id"], resolved: true, correlation_id: "corr-approval" });
    const done = await waitForTask(mcp, taskId, isTerminal);
    expect(done).toMatchObject({ status: "succeeded", final_response: "approval=approve_once" });
    const events = await allEvents(mcp, taskId);
    // the event says what is asked: the same summary, category and command (docs/agent-requests.md)
    expect(events.find((e) => e["event_type"] === "approval.requested")?.["payload"]).toEqual({
      request_id: request["request_id"],
      expires_at: request["expires_at"],
      summary: (request["payload"] as Json)["summary"],
      category: "command",
      title: (request["payload"] as Json)["title"],
      command: CANARY.approval,
    });
    expect(events.find((e) => e["event_type"] === "approval.resolved")?.["payload"]).toEqual({ decision: "approve_once" });
    // answering it again
    expect(await code(mcp, "respond_agent_approval", { task_id: taskId, request_id: request["request_id"], decision: "deny" })).toBe(
      "REQUEST_ALREADY_RESOLVED",
    );
  });

  test("deny resolves it and the provider hears the denial", async () => {
    const { taskId, request } = await pendingApproval();
    await ok(mcp, "respond_agent_approval", { task_id: taskId, request_id: request["request_id"], decision: "deny" });
    expect(await waitForTask(mcp, taskId, isTerminal)).toMatchObject({ status: "succeeded", final_response: "approval=deny" });
  });

  test("cancel_task resolves it and cancels the task", async () => {
    const { taskId, request } = await pendingApproval();
    const r = await ok(mcp, "respond_agent_approval", { task_id: taskId, request_id: request["request_id"], decision: "cancel_task" });
    expect(r["resolved"]).toBe(true);
    const done = await waitForTask(mcp, taskId, isTerminal);
    expect(done["status"]).toBe("cancelled");
    expect((await allEvents(mcp, taskId)).map((e) => e["event_type"])).toContain("task.cancelled");
  });

  test("two approvals in a row: the first one's id is resolved while the second is pending", async () => {
    const { taskId, request: first } = await pendingApproval(null, "approval-twice:make");
    await ok(mcp, "respond_agent_approval", { task_id: taskId, request_id: first["request_id"], decision: "approve_once" });
    const second = await waitForTask(
      mcp,
      taskId,
      (t) => t["status"] === "waiting_for_approval" && (t["pending_request"] as Json)["request_id"] !== first["request_id"],
    );
    const secondId = (second["pending_request"] as Json)["request_id"];
    expect(await code(mcp, "respond_agent_approval", { task_id: taskId, request_id: first["request_id"], decision: "deny" })).toBe("REQUEST_ALREADY_RESOLVED");
    await ok(mcp, "respond_agent_approval", { task_id: taskId, request_id: secondId, decision: "approve_session" });
    expect(await waitForTask(mcp, taskId, isTerminal)).toMatchObject({ final_response: "approvals=approve_once,approve_session" });
  });

  test("a request whose task has ended is REQUEST_STALE; an unknown request is REQUEST_NOT_FOUND", async () => {
    const { taskId, request } = await pendingApproval();
    expect(await code(mcp, "respond_agent_approval", { task_id: taskId, request_id: NO_SUCH_REQUEST, decision: "deny" })).toBe("REQUEST_NOT_FOUND");
    expect((await ok(mcp, "cancel_agent_task", { task_id: taskId }))["status"]).toBe("cancelled");
    expect(await code(mcp, "respond_agent_approval", { task_id: taskId, request_id: request["request_id"], decision: "approve_once" })).toBe("REQUEST_STALE");
    const task = await ok(mcp, "get_agent_task", { task_id: taskId });
    expect(task).toMatchObject({ status: "cancelled", pending_request_id: null });
  });

  test("a decision outside the enum is INVALID_ARGUMENT before any RPC", async () => {
    expect(await code(mcp, "respond_agent_approval", { task_id: NO_SUCH_TASK, request_id: NO_SUCH_REQUEST, decision: "yes" })).toBe("INVALID_ARGUMENT");
  });
});

describe("answer_agent_question", () => {
  let taskId: string;
  let requestId: string;

  test("a question is a pending request with the question payload", async () => {
    taskId = await review({ prompt: `question:${CANARY.question}`, correlation_id: "corr-question" });
    const task = await waitForTask(mcp, taskId, hasStatus("waiting_for_question"));
    const request = task["pending_request"] as Json;
    requestId = request["request_id"] as string;
    expect(request).toMatchObject({ kind: "question", status: "pending", task_id: taskId });
    expect(request["payload"]).toEqual({
      questions: [
        {
          question_id: "q1",
          prompt: CANARY.question,
          options: [
            { option_id: "a", label: "a" },
            { option_id: "b", label: "b" },
          ],
          multi_select: false,
          allow_free_text: true,
        },
      ],
    });
  });

  const INVALID: [string, Json[]][] = [
    ["an unknown question_id", [{ question_id: "q9", selected_option_ids: ["a"] }]],
    [
      "a question answered twice",
      [
        { question_id: "q1", selected_option_ids: ["a"] },
        { question_id: "q1", selected_option_ids: ["b"] },
      ],
    ],
    ["an unknown option id", [{ question_id: "q1", selected_option_ids: ["z"] }]],
    ["an option selected twice", [{ question_id: "q1", selected_option_ids: ["a", "a"] }]],
    ["two options for a single-select question", [{ question_id: "q1", selected_option_ids: ["a", "b"] }]],
    ["neither an option nor text", [{ question_id: "q1", selected_option_ids: [] }]],
    ["empty text and no option", [{ question_id: "q1", text: "" }]],
  ];
  for (const [what, answers] of INVALID) {
    test(`INVALID_QUESTION_ANSWER: ${what}; the request stays pending`, async () => {
      expect(await code(mcp, "answer_agent_question", { task_id: taskId, request_id: requestId, answers })).toBe("INVALID_QUESTION_ANSWER");
      expect((await ok(mcp, "get_agent_task", { task_id: taskId }))["status"]).toBe("waiting_for_question");
    });
  }

  test("answers that break the input schema (empty list, an unknown key) are INVALID_ARGUMENT", async () => {
    expect(await code(mcp, "answer_agent_question", { task_id: taskId, request_id: requestId, answers: [] })).toBe("INVALID_ARGUMENT");
    expect(
      await code(mcp, "answer_agent_question", {
        task_id: taskId,
        request_id: requestId,
        answers: [{ question_id: "q1", selected_option_ids: ["a"], note: "x" }],
      }),
    ).toBe("INVALID_ARGUMENT");
  });

  test("respond_agent_approval on a question is INVALID_APPROVAL_DECISION", async () => {
    expect(await code(mcp, "respond_agent_approval", { task_id: taskId, request_id: requestId, decision: "approve_once" })).toBe("INVALID_APPROVAL_DECISION");
  });

  test("answer_agent_question on an approval is INVALID_QUESTION_ANSWER", async () => {
    const approvalTask = await review({ prompt: "approval:ls" });
    const t = await waitForTask(mcp, approvalTask, hasStatus("waiting_for_approval"));
    const approvalRequest = (t["pending_request"] as Json)["request_id"];
    expect(await code(mcp, "answer_agent_question", { task_id: approvalTask, request_id: approvalRequest, answers: [{ question_id: "q1", text: "x" }] })).toBe(
      "INVALID_QUESTION_ANSWER",
    );
    await ok(mcp, "cancel_agent_task", { task_id: approvalTask });
  });

  test("a valid answer resolves the request; the provider gets the answers", async () => {
    const answers = [{ question_id: "q1", selected_option_ids: ["b"], text: CANARY.answer }];
    const r = await ok(mcp, "answer_agent_question", { task_id: taskId, request_id: requestId, answers });
    expect(r).toEqual({ task_id: taskId, request_id: requestId, resolved: true, correlation_id: "corr-question" });
    const done = await waitForTask(mcp, taskId, isTerminal);
    expect(done["status"]).toBe("succeeded");
    expect(JSON.parse(String(done["final_response"]))).toEqual(answers);
    const answered = (await allEvents(mcp, taskId)).find((e) => e["event_type"] === "question.answered");
    expect(answered?.["payload"]).toEqual({ question_count: 1 });
  });
});

describe("cancel_agent_task (idempotent, terminal-first)", () => {
  test("cancelling a running task answers cancelled; repeating it answers cancelled again", async () => {
    const taskId = await review({ prompt: "wait:", correlation_id: "corr-cancel" });
    await waitForTask(mcp, taskId, hasStatus("running"));
    expect(await ok(mcp, "cancel_agent_task", { task_id: taskId })).toEqual({ task_id: taskId, status: "cancelled", correlation_id: "corr-cancel" });
    const after = await ok(mcp, "get_agent_task", { task_id: taskId });
    expect(after["status"]).toBe("cancelled");
    expect(after["completed_at"]).toEqual(expect.any(String));
    expect(await ok(mcp, "cancel_agent_task", { task_id: taskId })).toEqual({ task_id: taskId, status: "cancelled", correlation_id: "corr-cancel" });
    const cancelled = (await allEvents(mcp, taskId)).filter((e) => e["event_type"] === "task.cancelled");
    expect(cancelled).toHaveLength(1);
    expect(cancelled[0]!["payload"]).toEqual({});
  });

  test("cancelling a task that already ended answers its terminal status and changes nothing", async () => {
    const done = await review({ prompt: "complete:fine" });
    const succeeded = await waitForTask(mcp, done, isTerminal);
    expect((await ok(mcp, "cancel_agent_task", { task_id: done }))["status"]).toBe("succeeded");
    expect(await ok(mcp, "get_agent_task", { task_id: done })).toEqual(succeeded);

    const failing = await review({ prompt: `fail:${CANARY.failure}` });
    const failed = await waitForTask(mcp, failing, isTerminal);
    expect(failed).toMatchObject({ status: "failed", error_code: "AGENT_PROVIDER_ERROR" });
    expect((await ok(mcp, "cancel_agent_task", { task_id: failing }))["status"]).toBe("failed");
  });
});

describe("continuation", () => {
  test("a continuation is a new task that resumes the prior task's session", async () => {
    const prior = await review({ prompt: "complete:first" });
    await waitForTask(mcp, prior, isTerminal);
    const next = await review({ prompt: "complete:second", continue_from_task_id: prior });
    expect(next).not.toBe(prior);
    const task = await waitForTask(mcp, next, isTerminal);
    expect(task).toMatchObject({ status: "succeeded", final_response: "continued:second", continue_from_task_id: prior });
    expect((task["manifest"] as Json)["continuation"]).toEqual({ from_task_id: prior });
  });

  test("continuing an unknown task, an active task, or escalating review to workspace-write is refused", async () => {
    expect(
      await code(mcp, "submit_agent_task", { runtime: "fake", workdir: "repo", prompt: "x", profile: "review", continue_from_task_id: NO_SUCH_TASK }),
    ).toBe("AGENT_TASK_NOT_FOUND");
    const active = await review({ prompt: "wait:" });
    await waitForTask(mcp, active, hasStatus("running"));
    expect(await code(mcp, "submit_agent_task", { runtime: "fake", workdir: "repo", prompt: "x", profile: "review", continue_from_task_id: active })).toBe(
      "AGENT_SESSION_NOT_RESUMABLE",
    );
    await ok(mcp, "cancel_agent_task", { task_id: active });
    const reviewed = await review({ prompt: "complete:r" });
    await waitForTask(mcp, reviewed, isTerminal);
    expect(
      await code(mcp, "submit_agent_task", { runtime: "fake", workdir: "repo", prompt: "x", profile: "workspace-write", continue_from_task_id: reviewed }),
    ).toBe("AGENT_PROFILE_NOT_ALLOWED");
  });
});

describe("idempotency", () => {
  test("the same key with the same request returns the existing task; another request under that key is a conflict", async () => {
    const args = { runtime: "fake", workdir: "repo", prompt: `complete:${CANARY.idempotent}`, profile: "review", idempotency_key: "key-e2e-1" };
    const first = await ok(mcp, "submit_agent_task", { ...args, correlation_id: "corr-idem" });
    expect(first).toMatchObject({ status: "queued", idempotency_key: "key-e2e-1", correlation_id: "corr-idem" });
    await waitForTask(mcp, first["task_id"] as string, isTerminal);
    // correlation_id is not part of the fingerprint; the replay answers with the stored task's own
    const replay = await ok(mcp, "submit_agent_task", { ...args, correlation_id: "corr-other" });
    expect(replay).toEqual({ task_id: first["task_id"], status: "succeeded", idempotency_key: "key-e2e-1", correlation_id: "corr-idem" });
    expect(await code(mcp, "submit_agent_task", { ...args, prompt: "complete:something else" })).toBe("AGENT_IDEMPOTENCY_CONFLICT");
    expect(await code(mcp, "submit_agent_task", { ...args, path: "src" })).toBe("AGENT_IDEMPOTENCY_CONFLICT");
  });
});

describe("correlation_id and idempotency_key", () => {
  const submitWith = (extraArgs: Json) =>
    mcp.call("submit_agent_task", { runtime: "fake", workdir: "repo", prompt: "complete:c", profile: "review", ...extraArgs });

  test("a 257-byte correlation_id, a 258-byte one in two-byte characters, or a control character is INVALID_ARGUMENT", async () => {
    expect(errorCode(await submitWith({ correlation_id: "c".repeat(257) }))).toBe("INVALID_ARGUMENT");
    expect(errorCode(await submitWith({ correlation_id: "é".repeat(129) }))).toBe("INVALID_ARGUMENT");
    expect(errorCode(await submitWith({ correlation_id: "line\nbreak" }))).toBe("INVALID_ARGUMENT");
    expect(errorCode(await submitWith({ correlation_id: "del\u007f" }))).toBe("INVALID_ARGUMENT");
    expect(errorCode(await submitWith({ idempotency_key: "k".repeat(257) }))).toBe("INVALID_ARGUMENT");
  });

  test("256 bytes are accepted and echoed; an empty string counts as absent", async () => {
    const long = "é".repeat(128);
    const r = structured(await submitWith({ correlation_id: long }));
    expect(r["correlation_id"]).toBe(long);
    const empty = structured(await submitWith({ correlation_id: "", idempotency_key: "" }));
    expect(empty).toMatchObject({ correlation_id: null, idempotency_key: null });
    await waitForTask(mcp, r["task_id"] as string, isTerminal);
    await waitForTask(mcp, empty["task_id"] as string, isTerminal);
  });
});

describe("read_agent_task_result (spooled results)", () => {
  let taskId: string;
  let task: Json;

  test("a result over the inline limit is spooled; get_agent_task shows a UTF-8-safe preview of at most 64 KiB", async () => {
    taskId = await review({ prompt: `repeat:${SPOOL_UNITS}:${CANARY.spooled}`, correlation_id: "corr-spool" });
    task = await waitForTask(mcp, taskId, isTerminal, 30_000);
    const size = SPOOL_UNITS * bytes(CANARY.spooled);
    expect(task).toMatchObject({ status: "succeeded", final_response_truncated: true, result: { storage: "spool", size_bytes: size, retrievable: true } });
    const preview = String(task["final_response"]);
    expect(bytes(preview)).toBeLessThanOrEqual(65_536);
    expect(bytes(preview)).toBeGreaterThan(65_536 - 4);
    expect(CANARY.spooled.repeat(SPOOL_UNITS).startsWith(preview)).toBe(true);
    const spooled = (await allEvents(mcp, taskId)).find((e) => e["event_type"] === "task.result_spooled");
    expect(spooled?.["payload"]).toEqual({ size_bytes: size, sha256: (task["result"] as Json)["sha256"] });
  });

  test("reading it in chunks reproduces it exactly: the SHA-256 and the size match", async () => {
    const result = task["result"] as { size_bytes: number; sha256: string };
    const hash = createHash("sha256");
    let offset = 0;
    let chunks = 0;
    let total = 0;
    for (;;) {
      const chunk = await ok<{ text: string; offset_bytes: number; next_offset_bytes: number; eof: boolean; correlation_id: string }>(
        mcp,
        "read_agent_task_result",
        { task_id: taskId, offset_bytes: offset, max_bytes: 65_535 },
      );
      expect(chunk.offset_bytes).toBe(offset);
      expect(chunk.correlation_id).toBe("corr-spool");
      expect(bytes(chunk.text)).toBeLessThanOrEqual(65_535);
      expect(chunk.next_offset_bytes).toBe(offset + bytes(chunk.text));
      expect(chunk.eof).toBe(chunk.next_offset_bytes === result.size_bytes);
      hash.update(chunk.text, "utf8");
      total += bytes(chunk.text);
      chunks++;
      offset = chunk.next_offset_bytes;
      if (chunk.eof) break;
      expect(chunks).toBeLessThan(100);
    }
    expect(chunks).toBeGreaterThan(1);
    expect(total).toBe(result.size_bytes);
    expect(hash.digest("hex")).toBe(result.sha256);
    // with the default max_bytes too
    const first = await ok<{ text: string }>(mcp, "read_agent_task_result", { task_id: taskId });
    expect(bytes(first.text)).toBeLessThanOrEqual(65_536);
    expect(bytes(first.text)).toBeGreaterThan(65_536 - 4);
  });

  test("at offset = size the chunk is empty with eof; past it, or inside a character, INVALID_RESULT_OFFSET", async () => {
    const size = (task["result"] as { size_bytes: number }).size_bytes;
    expect(await ok(mcp, "read_agent_task_result", { task_id: taskId, offset_bytes: size })).toMatchObject({
      text: "",
      offset_bytes: size,
      next_offset_bytes: size,
      eof: true,
    });
    expect(await code(mcp, "read_agent_task_result", { task_id: taskId, offset_bytes: size + 1 })).toBe("INVALID_RESULT_OFFSET");
    // "✓" starts right after the marker part of the unit; one byte into it is inside a character
    const inside = bytes(CANARY.spooled.slice(0, CANARY.spooled.indexOf("✓"))) + 1;
    expect(await code(mcp, "read_agent_task_result", { task_id: taskId, offset_bytes: inside, max_bytes: 16 })).toBe("INVALID_RESULT_OFFSET");
    // one byte is too small for the three-byte character that starts there
    expect(await code(mcp, "read_agent_task_result", { task_id: taskId, offset_bytes: inside - 1, max_bytes: 1 })).toBe("INVALID_RESULT_LIMIT");
  });

  test("an inline result is AGENT_RESULT_NOT_RETRIEVABLE; so is a task without a result", async () => {
    const inline = await review({ prompt: "complete:small" });
    await waitForTask(mcp, inline, isTerminal);
    expect(await code(mcp, "read_agent_task_result", { task_id: inline })).toBe("AGENT_RESULT_NOT_RETRIEVABLE");
    const running = await review({ prompt: "wait:" });
    expect(await code(mcp, "read_agent_task_result", { task_id: running })).toBe("AGENT_RESULT_NOT_RETRIEVABLE");
    await ok(mcp, "cancel_agent_task", { task_id: running });
  });
});

describe("unknown tasks", () => {
  const CALLS: [string, Json][] = [
    ["get_agent_task", {}],
    ["read_agent_task_events", {}],
    ["cancel_agent_task", {}],
    ["read_agent_task_result", {}],
    ["send_agent_message", { message: "hello" }],
    ["respond_agent_approval", { request_id: NO_SUCH_REQUEST, decision: "deny" }],
    ["answer_agent_question", { request_id: NO_SUCH_REQUEST, answers: [{ question_id: "q1", text: "x" }] }],
  ];
  test("every task tool answers AGENT_TASK_NOT_FOUND for an unknown id and for a malformed one", async () => {
    for (const [tool, args] of CALLS) {
      for (const id of [NO_SUCH_TASK, "not-a-task-id"]) {
        expect({ tool, id, code: await code(mcp, tool, { task_id: id, ...args }) }).toEqual({ tool, id, code: "AGENT_TASK_NOT_FOUND" });
      }
    }
  });
});

describe("files written by the provider and by the client", () => {
  test("a workspace-write task (the default profile) writes a file the client then reads", async () => {
    expect(structured(await mcp.call("create_text_file", { workdir: "repo", path: "notes/client.txt", content: CANARY.clientFile }))["created"]).toBe(true);
    const taskId = await submit(mcp, { prompt: `write:notes/provider.txt:${CANARY.providerFile}`, correlation_id: "corr-write" });
    const task = await waitForTask(mcp, taskId, isTerminal);
    expect(task).toMatchObject({ status: "succeeded", profile: "workspace-write", final_response: "wrote=notes/provider.txt" });
    for (const [path, content] of [
      ["notes/provider.txt", CANARY.providerFile],
      ["notes/client.txt", CANARY.clientFile],
    ]) {
      expect((await ok(mcp, "read_text_file", { workdir: "repo", path }))["content"]).toBe(content);
    }
  });
});

describe("the Agent tools over Streamable HTTP", () => {
  test("a whole task over HTTP: 20 tools, submit, follow the events with wait_ms, read the result", async () => {
    const http = await startHttp(env.configPath);
    try {
      expect((await http.client.listTools()).tools).toHaveLength(20);
      const taskId = await submit(http, { prompt: "events:3", profile: "review", correlation_id: "corr-http" });
      const task = await waitForTask(http, taskId, isTerminal);
      expect(task).toMatchObject({ status: "succeeded", final_response: "events=3", correlation_id: "corr-http" });
      const messages = (await allEvents(http, taskId)).filter((e) => e["event_type"] === "agent.message");
      expect(messages.map((e) => e["payload"])).toEqual([{ text: "event 1" }, { text: "event 2" }, { text: "event 3" }]);
      const canaryTask = await submit(http, { prompt: `complete:${CANARY.http}`, profile: "review" });
      expect((await waitForTask(http, canaryTask, isTerminal))["final_response"]).toBe(CANARY.http);
      await eventually(() => http.audit().filter((r) => r["event"] === "tool_call").length >= 6);
      expect(http.audit().find((r) => r["event"] === "startup")?.["transport"]).toBe("http");
    } finally {
      await http.close();
      httpLogs.push(http.stderr());
    }
  });
});

describe("correlation_id and metadata-only audit records", () => {
  test("every Agent tool_call record carries schema_version 1 and the task's correlation_id", async () => {
    await eventually(() => stdio.audit().some((r) => r["tool"] === "read_agent_task_result" && r["success"] === true));
    const agentTools = new Set(AGENT_TOOLS);
    const records = stdio.audit().filter((r) => r["event"] === "tool_call" && agentTools.has(String(r["tool"])));
    expect(new Set(records.map((r) => r["tool"]))).toEqual(agentTools);
    for (const r of records) expect({ tool: r["tool"], schema_version: r["schema_version"] }).toEqual({ tool: r["tool"], schema_version: 1 });
    const expected: Record<string, string> = {};
    for (const r of records) {
      if (r["tool"] === "submit_agent_task" && r["success"] === true && typeof r["correlation_id"] === "string") {
        expected[String(r["task_id"])] = r["correlation_id"];
      }
    }
    for (const corr of ["corr-basic", "corr-steer", "corr-approval", "corr-question", "corr-cancel", "corr-spool"]) {
      expect(Object.values(expected)).toContain(corr);
    }
    let checked = 0;
    for (const r of records) {
      const corr = expected[String(r["task_id"])];
      if (r["success"] !== true || corr === undefined) continue;
      expect({ tool: r["tool"], task_id: r["task_id"], correlation_id: r["correlation_id"] }).toEqual({
        tool: r["tool"],
        task_id: r["task_id"],
        correlation_id: corr,
      });
      checked++;
    }
    expect(checked).toBeGreaterThan(30);
  });

  test("Agent records hold byte counts, never the prompt or the message", async () => {
    const records = stdio.audit().filter((r) => r["event"] === "tool_call");
    const steer = records.find((r) => r["tool"] === "send_agent_message" && r["success"] === true);
    expect(steer?.["message_bytes"]).toBe(bytes(CANARY.steer));
    const spoolSubmit = records.find((r) => r["tool"] === "submit_agent_task" && r["correlation_id"] === "corr-spool");
    expect(spoolSubmit).toMatchObject({ runtime: "fake", profile: "review", prompt_bytes: bytes(`repeat:${SPOOL_UNITS}:${CANARY.spooled}`) });
    expect(spoolSubmit).not.toHaveProperty("prompt");
    const events = records.find((r) => r["tool"] === "read_agent_task_events" && r["success"] === true);
    expect(Object.keys(events ?? {})).toEqual(expect.arrayContaining(["task_id", "after_event_id", "limit", "wait_ms", "returned", "next_after_event_id"]));
    const result = records.find((r) => r["tool"] === "read_agent_task_result" && r["success"] === true);
    expect(Object.keys(result ?? {})).toEqual(expect.arrayContaining(["task_id", "offset_bytes", "max_bytes", "bytes_returned", "eof"]));
  });
});

describe("native identifiers", () => {
  test("no task object carries native_session_id, native_turn_id or request_fingerprint; no event payload thread_id or turn_id", async () => {
    const keys = new Set<string>();
    let tasks = 0;
    let payloads = 0;
    for (const r of mcp.results) {
      const s = r.structuredContent as Json | undefined;
      if (!s) continue;
      if (typeof s["manifest_sha256"] !== "undefined") {
        tasks++;
        for (const k of Object.keys(s)) keys.add(k);
      }
      for (const e of (s["events"] as Json[] | undefined) ?? []) {
        payloads++;
        deepKeys(e["payload"], keys);
      }
    }
    expect(tasks).toBeGreaterThan(20);
    expect(payloads).toBeGreaterThan(20);
    for (const hidden of ["native_session_id", "native_turn_id", "request_fingerprint", "thread_id", "turn_id", "session_id"]) {
      expect(keys.has(hidden)).toBe(false);
    }
  });
});

describe("Bridge limits pass through verbatim", () => {
  test("a prompt over 64 KiB is AGENT_PROMPT_TOO_LARGE; a steering message over 64 KiB is AGENT_MESSAGE_TOO_LARGE", async () => {
    expect(await code(mcp, "submit_agent_task", { runtime: "fake", workdir: "repo", prompt: "p".repeat(65_537), profile: "review" })).toBe(
      "AGENT_PROMPT_TOO_LARGE",
    );
    expect(await code(mcp, "send_agent_message", { task_id: NO_SUCH_TASK, message: "m".repeat(65_537) })).toBe("AGENT_MESSAGE_TOO_LARGE");
  });
});

describe("an RPC the Bridge does not answer in time", () => {
  test("times out after rpc_timeout_seconds (plus wait_ms for events) as AGENT_BRIDGE_UNAVAILABLE", async () => {
    const tables = treeTables(env);
    const impatient = await startStdio(writeConfig(env.dir.path, { ...tables, bridge: { ...tables.bridge, rpc_timeout_seconds: 1 } }, "impatient.toml"));
    // a stopped Bridge still accepts connections (the kernel's backlog) but never answers
    bridge.proc.kill("SIGSTOP");
    // the same call through the default 30 s bound, sent first: still waiting when each impatient call
    // ends, so each ended on its own bound
    let patientAnswered = false;
    const patient = code(mcp, "get_agent_task", { task_id: NO_SUCH_TASK }).then((c) => {
      patientAnswered = true;
      return c;
    });
    try {
      let t0 = performance.now();
      expect(await code(impatient, "get_agent_task", { task_id: NO_SUCH_TASK })).toBe("AGENT_BRIDGE_UNAVAILABLE");
      expect(performance.now() - t0).toBeGreaterThanOrEqual(900);
      t0 = performance.now();
      expect(await code(impatient, "read_agent_task_events", { task_id: NO_SUCH_TASK, wait_ms: 1_000 })).toBe("AGENT_BRIDGE_UNAVAILABLE");
      expect(performance.now() - t0).toBeGreaterThanOrEqual(1_900);
      expect(patientAnswered).toBe(false);
    } finally {
      bridge.proc.kill("SIGCONT");
      await impatient.close();
    }
    // once the Bridge runs again it answers the patient call
    expect(await patient).toBe("AGENT_TASK_NOT_FOUND");
    // and the Bridge serves again
    expect((await ok<{ runtimes: Json[] }>(mcp, "list_agent_runtimes")).runtimes).toHaveLength(1);
  });
});

describe("MCP-side pre-checks, and the Bridge down", () => {
  test("with the Bridge stopped, a call that needs it is AGENT_BRIDGE_UNAVAILABLE", async () => {
    expect(await bridge.stop("SIGTERM")).toBe(0);
    bridgeLog = bridge.stderr();
    expect(await code(mcp, "get_agent_task", { task_id: NO_SUCH_TASK })).toBe("AGENT_BRIDGE_UNAVAILABLE");
    expect(await code(mcp, "list_agent_runtimes")).toBe("AGENT_BRIDGE_UNAVAILABLE");
    expect(await code(mcp, "submit_agent_task", { runtime: "fake", workdir: "repo", prompt: "complete:x" })).toBe("AGENT_BRIDGE_UNAVAILABLE");
    expect(await code(mcp, "read_agent_task_events", { task_id: NO_SUCH_TASK, wait_ms: 1000 })).toBe("AGENT_BRIDGE_UNAVAILABLE");
    // an encoded request over 1 MiB is refused before any connection is tried
    expect(await code(mcp, "submit_agent_task", { runtime: "fake", workdir: "repo", prompt: "p".repeat(1_100_000), profile: "review" })).toBe(
      "REQUEST_TOO_LARGE",
    );
  });

  // Each row fails an earlier check than the next one would; the Bridge is down, so every code
  // here was decided by the MCP side before any RPC.
  const PRECHECKS: [string, Json, string][] = [
    ["an unknown alias comes first", { workdir: "nope", runtime: "codex", path: "../x" }, "WORKDIR_NOT_FOUND"],
    ["a case mismatch is an unknown alias", { workdir: "Repo" }, "WORKDIR_NOT_FOUND"],
    ["then a disabled agent mode", { workdir: "docs", runtime: "codex", path: "../x" }, "AGENT_DISABLED"],
    ["then a runtime outside the allowlist", { runtime: "codex", profile: "workspace-write", path: "../x" }, "AGENT_RUNTIME_NOT_ALLOWED"],
    ["then a profile above the mode", { workdir: "rev", profile: "workspace-write", path: "../x" }, "AGENT_PROFILE_NOT_ALLOWED"],
    ["then the path: .. above the root", { path: "src/../../x" }, "PATH_OUTSIDE_WORKDIR"],
    ["an absolute path", { path: "/etc" }, "PATH_OUTSIDE_WORKDIR"],
    ["a ~ path", { path: "~/x" }, "PATH_OUTSIDE_WORKDIR"],
    ["a NUL", { path: "src\u0000x" }, "ACCESS_DENIED"],
    ["a reserved name", { path: ".serverfs-tmp-0123456789abcdef" }, "RESERVED_PATH"],
    ["a hidden segment", { path: "src/.cache" }, "HIDDEN_PATH_NOT_ALLOWED"],
    ["a denied name", { path: "keys/server.pem" }, "DENIED_PATH"],
    ["a symlinked start directory", { path: "link" }, "SYMLINK_NOT_ALLOWED"],
    ["a symlink in the parent chain", { path: "link/deep" }, "SYMLINK_NOT_ALLOWED"],
    ["a missing directory", { path: "src/missing" }, "PATH_NOT_FOUND"],
    ["a file", { path: "README.md" }, "NOT_A_DIRECTORY"],
  ];
  for (const [what, args, expected] of PRECHECKS) {
    test(`submit_agent_task: ${what} → ${expected}`, async () => {
      const r = await mcp.call("submit_agent_task", { runtime: "fake", workdir: "repo", prompt: "complete:x", profile: "review", ...args });
      expect(errorCode(r)).toBe(expected);
      // the normalized path is echoed at most; a refused absolute path never is
      expect((r.content[0] as { text: string }).text).not.toContain("/etc");
    });
  }

  test("schema validation comes before everything: a 257-byte correlation_id with an unknown alias is INVALID_ARGUMENT", async () => {
    expect(await code(mcp, "submit_agent_task", { runtime: "fake", workdir: "nope", prompt: "x", correlation_id: "c".repeat(257) })).toBe("INVALID_ARGUMENT");
    expect(await code(mcp, "submit_agent_task", { runtime: "gpt", workdir: "repo", prompt: "x" })).toBe("INVALID_ARGUMENT");
    expect(await code(mcp, "read_agent_task_events", { task_id: NO_SUCH_TASK, wait_ms: 25_001 })).toBe("INVALID_ARGUMENT");
    expect(await code(mcp, "read_agent_task_result", { task_id: NO_SUCH_TASK, max_bytes: 0 })).toBe("INVALID_ARGUMENT");
  });
});

describe("canary scan: nothing private reaches a log", () => {
  test("neither the MCP servers' stderr nor the Bridge's holds a prompt, message, answer, final response, file content or host path", async () => {
    await eventually(() => stdio.audit().some((r) => r["tool"] === "read_agent_task_result" && r["error_code"] === "INVALID_ARGUMENT"));
    const logs: [string, string][] = [
      ["mcp (stdio)", stdio.stderr()],
      ...httpLogs.map((l, i): [string, string] => [`mcp (http ${i + 1})`, l]),
      ["bridge", bridgeLog],
    ];
    // the canaries did travel: the client saw each of them in some result
    const seen = JSON.stringify(mcp.results.map((r) => r.structuredContent ?? null));
    for (const [name, c] of Object.entries(CANARY)) {
      if (name === "http") continue; // that one went over the HTTP session
      expect({ canary: name, seen: seen.includes(JSON.stringify(c).slice(1, -1)) }).toEqual({ canary: name, seen: true });
    }
    // the logs are not empty: both sides wrote their audit records
    expect(stdio.audit().filter((r) => r["event"] === "tool_call").length).toBeGreaterThan(100);
    expect(bridge.startupLine()?.["event"]).toBe("bridge_started");
    expect(httpLogs).toHaveLength(1);
    const tmp = `${tmpdir()}/`;
    for (const [name, log] of logs) {
      expect({ log: name, canary: log.includes(MARKER) }).toEqual({ log: name, canary: false });
      for (const path of [env.dir.path, extra.path, env.socketPath, env.stateDir, env.lockDir, env.workspace, tmp]) {
        expect({ log: name, path, found: log.includes(path) }).toEqual({ log: name, path, found: false });
      }
    }
  });
});
