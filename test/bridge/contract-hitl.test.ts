/**
 * Bridge contract, humans in the loop and steering (docs/task-model.md#human-in-the-loop-requests, docs/task-model.md#cancellation): approvals and questions with
 * every check of docs/bridge-rpc.md#taskapprovalrespond-and-taskquestionanswer in order, late and stale replies, live steering, and the idempotent,
 * terminal-first cancel — through the real Bridge and the fake runtime's scripted requests.
 */
import { describe, expect, test } from "bun:test";
import { allEvents, call, codeOf, isTerminalTask, markedProcesses, type RpcResponse, recordedMark, rpc, submitTask } from "../helpers/bridge.ts";
import { poll } from "../helpers/poll.ts";
import { fakeQuestion } from "../helpers/questions.ts";
import { type Task, useBridge } from "../helpers/use-bridge.ts";

const { env, sock, bridge, submit, waitFor } = useBridge();

/** Submits a task and waits until it asks a human; returns the task and its pending request id. */
async function asking(prompt: string): Promise<{ taskId: string; requestId: string; task: Task }> {
  const taskId = await submit({ prompt });
  const task = await waitFor(taskId, (t) => String(t["status"]).startsWith("waiting_for_"));
  return { taskId, requestId: task["pending_request_id"] as string, task };
}

const respond = (taskId: string, requestId: string, decision: string, extra: Record<string, unknown> = {}) =>
  rpc(sock, "task.approval.respond", { task_id: taskId, request_id: requestId, decision, ...extra });
const answer = (taskId: string, requestId: string, answers: unknown[]) =>
  rpc(sock, "task.question.answer", { task_id: taskId, request_id: requestId, answers });
const ended = (taskId: string) => waitFor(taskId, isTerminalTask);

const providerMark = (taskId: string): string => recordedMark(env.stateDir, taskId);

describe("approvals", () => {
  test("an approval opens a pending request (expires at the deadline) and approve_once resumes the run", async () => {
    const { taskId, requestId, task } = await asking("approval:npm test");
    expect(task["status"]).toBe("waiting_for_approval");
    expect(requestId).toMatch(/^req_[0-9a-f]{24}$/);
    expect(task["pending_request"]).toEqual({
      request_id: requestId,
      task_id: taskId,
      kind: "approval",
      status: "pending",
      payload: {
        category: "command",
        title: expect.any(String),
        command_display: "npm test",
        available_decisions: ["approve_once", "approve_session", "deny", "cancel_task"],
        summary: expect.stringContaining("npm test"),
      },
      created_at: expect.stringMatching(/Z$/),
      expires_at: task["deadline_at"],
      resolved_at: null,
      resolution: null,
    });
    const r = await respond(taskId, requestId, "approve_once");
    expect(r.result).toEqual({ task_id: taskId, request_id: requestId, resolved: true, correlation_id: null });
    expect(await ended(taskId)).toMatchObject({ status: "succeeded", final_response: "approval=approve_once", pending_request: null });
    const events = await allEvents(sock, taskId);
    expect(events.map((e) => [e.event_type, e.payload])).toEqual([
      ["task.started", { runtime: "fake", model: null, effort: null, max_budget_usd: null }],
      [
        "approval.requested",
        {
          request_id: requestId,
          expires_at: task["deadline_at"],
          summary: expect.stringContaining("npm test"),
          category: "command",
          title: expect.any(String),
          command: "npm test",
        },
      ],
      ["approval.resolved", { decision: "approve_once" }],
      ["task.completed", { result_storage: "inline", result_size_bytes: 21 }],
    ]);
  });

  test("deny and approve_session reach the provider; two approvals in a row are answered one at a time", async () => {
    const first = await asking("approval-twice:rm -rf build");
    expect(codeOf(await respond(first.taskId, first.requestId, "deny"))).toBeUndefined();
    const second = await waitFor(first.taskId, (t) => t["status"] === "waiting_for_approval" && t["pending_request_id"] !== first.requestId);
    expect(codeOf(await respond(first.taskId, second["pending_request_id"] as string, "approve_session"))).toBeUndefined();
    expect(await ended(first.taskId)).toMatchObject({ status: "succeeded", final_response: "approvals=deny,approve_session" });
  });

  test("cancel_task resolves the request, then cancels the task exactly as task.cancel", async () => {
    const { taskId, requestId } = await asking("approval:deploy");
    expect((await respond(taskId, requestId, "cancel_task")).result).toMatchObject({ resolved: true });
    const t = await call(sock, "task.get", { task_id: taskId });
    expect(t).toMatchObject({ status: "cancelled", error_code: null, final_response: null });
    const types = (await allEvents(sock, taskId)).map((e) => e.event_type);
    expect(types.filter((e) => e === "task.cancelled")).toHaveLength(1);
    expect(types.indexOf("approval.resolved")).toBeLessThan(types.indexOf("task.cancelled"));
  });

  test("an approval payload over 64 KiB opens no request: the provider is refused and the task continues", async () => {
    // the largest prompt there is: its command alone fits, the payload around it does not
    const taskId = await submit({ prompt: `approval:${"x".repeat(65_536 - "approval:".length)}` });
    const t = await ended(taskId);
    expect(t).toMatchObject({ status: "succeeded", final_response: "approval=deny", pending_request: null });
    const types = (await allEvents(sock, taskId)).map((e) => e.event_type);
    expect(types).toEqual(["task.started", "task.completed"]);
  });

  test("checks in order: task, request, resolved, stale, kind, decision, permissions", async () => {
    const { taskId, requestId } = await asking("approval:make");
    const other = await submit({ prompt: "complete:x" });
    await ended(other);
    expect(codeOf(await respond("agt_000000000000000000000000", requestId, "deny"))).toBe("AGENT_TASK_NOT_FOUND");
    expect(codeOf(await respond(other, requestId, "deny"))).toBe("REQUEST_NOT_FOUND");
    expect(codeOf(await respond(taskId, "req_000000000000000000000000", "deny"))).toBe("REQUEST_NOT_FOUND");
    expect(codeOf(await respond(taskId, requestId, "maybe"))).toBe("INVALID_APPROVAL_DECISION");
    expect(codeOf(await answer(taskId, requestId, [{ question_id: "q1", selected_option_ids: ["a"] }]))).toBe("INVALID_QUESTION_ANSWER");
    expect(codeOf(await respond(taskId, requestId, "approve_once", { granted_permission_ids: ["net"] }))).toBe("PERMISSION_OUTSIDE_POLICY");
    // none of the refused replies consumed the request
    expect((await call(sock, "task.get", { task_id: taskId }))["status"]).toBe("waiting_for_approval");
    expect(codeOf(await respond(taskId, requestId, "approve_once"))).toBeUndefined();
    expect(codeOf(await respond(taskId, requestId, "approve_once"))).toBe("REQUEST_ALREADY_RESOLVED");
    await ended(taskId);
    expect(codeOf(await respond(taskId, requestId, "maybe"))).toBe("REQUEST_ALREADY_RESOLVED");
  });

  test("a request staled by cancel answers REQUEST_STALE, before any kind or decision check", async () => {
    const { taskId, requestId } = await asking("approval:make");
    expect((await call(sock, "task.cancel", { task_id: taskId }))["status"]).toBe("cancelled");
    const t = await call(sock, "task.get", { task_id: taskId });
    expect(t).toMatchObject({ status: "cancelled", pending_request_id: null, pending_request: null });
    expect(codeOf(await respond(taskId, requestId, "approve_once"))).toBe("REQUEST_STALE");
    expect(codeOf(await respond(taskId, requestId, "maybe"))).toBe("REQUEST_STALE");
    expect(codeOf(await answer(taskId, requestId, []))).toBe("REQUEST_STALE");
  });
});

describe("questions", () => {
  test("a question opens a pending request with its payload; a valid answer reaches the provider", async () => {
    const { taskId, requestId, task } = await asking("question:Which one?");
    expect(task["status"]).toBe("waiting_for_question");
    expect((task["pending_request"] as Task)["payload"]).toEqual(fakeQuestion("Which one?"));
    expect(codeOf(await respond(taskId, requestId, "approve_once"))).toBe("INVALID_APPROVAL_DECISION");
    const r = await answer(taskId, requestId, [{ question_id: "q1", selected_option_ids: ["b"], text: "because" }]);
    expect(r.result).toEqual({ task_id: taskId, request_id: requestId, resolved: true, correlation_id: null });
    expect(await ended(taskId)).toMatchObject({
      status: "succeeded",
      final_response: '[{"question_id":"q1","selected_option_ids":["b"],"text":"because"}]',
    });
    const answered = (await allEvents(sock, taskId)).find((e) => e.event_type === "question.answered");
    expect(answered?.payload).toEqual({ question_count: 1 });
  });

  test("every malformed answer is INVALID_QUESTION_ANSWER and leaves the question pending", async () => {
    const { taskId, requestId } = await asking("question:Pick");
    const invalid: [string, unknown[]][] = [
      ["no answers", []],
      ["an answer that is not an object", ["q1"]],
      ["an answer that is null", [null]],
      ["an answer that is an array", [["q1"]]],
      ["an unknown key", [{ question_id: "q1", selected_option_ids: ["a"], note: "x" }]],
      ["a question_id that is not a string", [{ question_id: 1, selected_option_ids: ["a"] }]],
      ["an unknown question_id", [{ question_id: "q9", selected_option_ids: ["a"] }]],
      [
        "the same question twice",
        [
          { question_id: "q1", selected_option_ids: ["a"] },
          { question_id: "q1", selected_option_ids: ["b"] },
        ],
      ],
      ["selected_option_ids that is not an array", [{ question_id: "q1", selected_option_ids: "a" }]],
      ["a selected option that is not a string", [{ question_id: "q1", selected_option_ids: [1] }]],
      ["an unknown option", [{ question_id: "q1", selected_option_ids: ["z"] }]],
      ["a repeated option", [{ question_id: "q1", selected_option_ids: ["a", "a"] }]],
      ["two options on a single-select question", [{ question_id: "q1", selected_option_ids: ["a", "b"] }]],
      ["text that is not a string", [{ question_id: "q1", text: 5 }]],
      ["neither an option nor text", [{ question_id: "q1" }]],
      ["only empty text", [{ question_id: "q1", selected_option_ids: [], text: "" }]],
    ];
    for (const [why, answers] of invalid) {
      expect([why, codeOf(await answer(taskId, requestId, answers))]).toEqual([why, "INVALID_QUESTION_ANSWER"]);
    }
    expect((await call(sock, "task.get", { task_id: taskId }))["status"]).toBe("waiting_for_question");
    expect(codeOf(await answer(taskId, requestId, [{ question_id: "q1", text: "free text only" }]))).toBeUndefined();
    expect(await ended(taskId)).toMatchObject({ final_response: '[{"question_id":"q1","selected_option_ids":[],"text":"free text only"}]' });
    expect(codeOf(await answer(taskId, requestId, [{ question_id: "q1", selected_option_ids: ["a"] }]))).toBe("REQUEST_ALREADY_RESOLVED");
  });
});

describe("steering", () => {
  test("a message reaches a steer: run, which completes with steered=<message>; user.message records its bytes", async () => {
    const taskId = await submit({ prompt: "steer:" });
    await waitFor(taskId, (t) => t["status"] === "running");
    const r = await call(sock, "task.message.send", { task_id: taskId, message: "use tabs ✓" });
    expect(r).toEqual({ task_id: taskId, accepted: true, correlation_id: null });
    expect(await ended(taskId)).toMatchObject({ status: "succeeded", final_response: "steered=use tabs ✓" });
    const message = (await allEvents(sock, taskId)).find((e) => e.event_type === "user.message");
    expect(message?.payload).toEqual({ bytes: Buffer.byteLength("use tabs ✓") });
    expect(JSON.stringify(await allEvents(sock, taskId))).not.toContain("use tabs");
  });

  test("a running task has its input: a message sent the moment it reads running is accepted", async () => {
    // running is entered only after the handshake and the task input (docs/task-model.md#execution steps 3–4), so there is
    // no window in which a running provider is "not ready" for the message
    for (let i = 0; i < 20; i++) {
      const taskId = await submit({ prompt: "steer:" });
      await waitFor(taskId, (t) => t["status"] === "running");
      const r = await rpc(sock, "task.message.send", { task_id: taskId, message: `m${i}` });
      expect([i, codeOf(r)]).toEqual([i, undefined]);
      expect(await ended(taskId)).toMatchObject({ final_response: `steered=m${i}` });
    }
  }, 60_000);

  test("message checks come before the task lookup; a terminal task is AGENT_TASK_TERMINAL", async () => {
    const unknown = "agt_000000000000000000000000";
    expect(codeOf(await rpc(sock, "task.message.send", { task_id: unknown, message: "" }))).toBe("INVALID_REQUEST");
    expect(codeOf(await rpc(sock, "task.message.send", { task_id: unknown, message: "x".repeat(65_537) }))).toBe("AGENT_MESSAGE_TOO_LARGE");
    expect(codeOf(await rpc(sock, "task.message.send", { task_id: unknown, message: "hi" }))).toBe("AGENT_TASK_NOT_FOUND");
    const done = await submit({ prompt: "complete:x" });
    await ended(done);
    expect(codeOf(await rpc(sock, "task.message.send", { task_id: done, message: "hi" }))).toBe("AGENT_TASK_TERMINAL");
    const steer = await submit({ prompt: "steer:" });
    await waitFor(steer, (t) => t["status"] === "running");
    expect(codeOf(await rpc(sock, "task.message.send", { task_id: steer, message: "x".repeat(65_536) }))).toBeUndefined();
    await ended(steer);
  });
});

describe("cancel: idempotent and terminal-first", () => {
  test("cancel is committed before the answer, then repeats its answer; task.cancelled is emitted once", async () => {
    const taskId = await submit({ prompt: "wait:" });
    await waitFor(taskId, (t) => t["status"] === "running");
    expect(await call(sock, "task.cancel", { task_id: taskId })).toEqual({ task_id: taskId, status: "cancelled", correlation_id: null });
    const t = await call(sock, "task.get", { task_id: taskId });
    expect(t).toMatchObject({ status: "cancelled", error_code: null });
    expect(t["completed_at"]).toEqual(expect.any(String));
    expect((await call(sock, "task.cancel", { task_id: taskId }))["status"]).toBe("cancelled");
    // the run's finally path is over (its last step logs task_ended): nothing can append after this
    await bridge().nextLine("task_ended", { since: 0, where: (l) => l["task_id"] === taskId });
    const types = (await allEvents(sock, taskId)).map((e) => e.event_type);
    expect(types.filter((e) => e === "task.cancelled")).toHaveLength(1);
    expect(types.at(-1)).toBe("task.cancelled");
    expect((await call(sock, "task.get", { task_id: taskId }))["completed_at"]).toBe(t["completed_at"]);
  });

  test("cancelling an ended task answers its own status and changes nothing", async () => {
    const ok = await submit({ prompt: "complete:x" });
    const failed = await submit({ prompt: "fail:no" });
    const okTask = await ended(ok);
    await ended(failed);
    expect(await call(sock, "task.cancel", { task_id: ok })).toEqual({ task_id: ok, status: "succeeded", correlation_id: null });
    expect((await call(sock, "task.cancel", { task_id: failed }))["status"]).toBe("failed");
    expect(await call(sock, "task.get", { task_id: ok })).toEqual(okTask);
  });

  test("a cancelled write task releases its lease once its whole provider group, grandchild included, is stopped", async () => {
    const taskId = await submit({ prompt: "spawn:30", profile: "workspace-write" });
    await waitFor(taskId, (t) => t["status"] === "running");
    const mark = providerMark(taskId);
    // "running" comes as the provider starts; its `sleep 30` a moment later
    await poll(() => markedProcesses(mark).length >= 2, 10_000, "the provider and its `sleep 30` running");
    await call(sock, "task.cancel", { task_id: taskId });
    let next: RpcResponse | undefined;
    await poll(
      async () => {
        next = await submitTask(sock, { prompt: "complete:next", profile: "workspace-write" });
        if (!next.ok) expect(codeOf(next)).toBe("WORKDIR_BUSY");
        return next.ok;
      },
      20_000,
      "a write submit after the lease's release",
    );
    expect(await ended(next!.result!["task_id"] as string)).toMatchObject({ status: "succeeded" });
    expect(markedProcesses(mark)).toEqual([]);
  });
});
