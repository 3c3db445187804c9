/**
 * Bridge contract, lifetimes (docs/task-model.md#deadlines-and-interaction-expiry, docs/task-model.md#submission step 13.5): the task
 * deadline, interaction expiry and late replies, the active-task limit, and 168 h retention GC of the
 * whole task unit including its spool file. Each concern runs its own real Bridge, because the
 * lifecycle values are Bridge-wide.
 */
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { canonicalJson } from "../../src/shared/canonical-json.ts";
import { allEvents, call, codeOf, isTerminalTask, rpc, submitTask } from "../helpers/bridge.ts";
import { poll } from "../helpers/poll.ts";
import { useBridge } from "../helpers/use-bridge.ts";

/** task_timeout 2 s (requests expire at the deadline); one interaction timeout of 1 s; a quiet one for GC and the limit. */
const deadline = useBridge({ lifecycle: { task_timeout_seconds: 2 } });
const expiry = useBridge({ lifecycle: { interaction_timeout_seconds: 1 } });
// a long maintenance interval, so only the submit's own GC pass can collect anything
const quiet = useBridge({ lifecycle: { max_active_tasks: 1, maintenance_interval_seconds: 3600 } });

const ms = (iso: unknown) => Date.parse(iso as string);

describe("task deadline (task_timeout_seconds = 2)", () => {
  test("task timeout and stale HITL: a wait: run and a run waiting for approval are interrupted with AGENT_TASK_TIMED_OUT; the request goes stale", async () => {
    const waiting = await deadline.submit({ prompt: "wait:" });
    const asking = await deadline.submit({ prompt: "approval:make" });
    const pending = await deadline.waitFor(asking, (t) => t["status"] === "waiting_for_approval");
    const requestId = pending["pending_request_id"] as string;
    expect((pending["pending_request"] as Record<string, unknown>)["expires_at"]).toBe(pending["deadline_at"]);
    expect(ms(pending["deadline_at"]) - ms(pending["created_at"])).toBe(2000);

    for (const taskId of [waiting, asking]) {
      const t = await deadline.waitFor(taskId, isTerminalTask, 15_000);
      expect(t).toMatchObject({ status: "interrupted", error_code: "AGENT_TASK_TIMED_OUT", pending_request_id: null, final_response: null });
      expect(ms(t["completed_at"])).toBeGreaterThanOrEqual(ms(t["deadline_at"]));
      expect((await allEvents(deadline.sock, taskId)).at(-1)).toMatchObject({
        event_type: "task.interrupted",
        payload: { error_code: "AGENT_TASK_TIMED_OUT" },
      });
    }
    const events = await allEvents(deadline.sock, asking);
    expect(events.find((e) => e.event_type === "interaction.expired")?.payload).toEqual({ request_id: requestId, kind: "approval" });
    const late = await rpc(deadline.sock, "task.approval.respond", { task_id: asking, request_id: requestId, decision: "approve_once" });
    expect(codeOf(late)).toBe("REQUEST_STALE");
  }, 30_000);

  test("a write task past its deadline gives its slot back once its provider is stopped", async () => {
    const writer = await deadline.submit({ prompt: "wait:", profile: "workspace-write" });
    expect(await deadline.waitFor(writer, isTerminalTask, 15_000)).toMatchObject({ error_code: "AGENT_TASK_TIMED_OUT" });
    const guard = join(deadline.env.lockDir, "active", "01");
    await poll(() => !existsSync(guard), 15_000, "the guard's removal");
    const next = await deadline.submit({ prompt: "complete:next", profile: "workspace-write" });
    expect(await deadline.waitFor(next, isTerminalTask)).toMatchObject({ status: "succeeded" });
  }, 30_000);
});

describe("interaction expiry (interaction_timeout_seconds = 1)", () => {
  test("an unanswered approval expires before the deadline: interrupted with AGENT_INTERACTION_TIMED_OUT, late reply REQUEST_STALE", async () => {
    const taskId = await expiry.submit({ prompt: "approval:make" });
    const pending = await expiry.waitFor(taskId, (t) => t["status"] === "waiting_for_approval");
    const request = pending["pending_request"] as Record<string, unknown>;
    // expires_at is "now + 1 s" when the request opens; created_at is stamped by the same insert
    const expiresIn = ms(request["expires_at"]) - ms(request["created_at"]);
    expect(expiresIn).toBeGreaterThan(900);
    expect(expiresIn).toBeLessThanOrEqual(1000);
    expect(ms(request["expires_at"])).toBeLessThan(ms(pending["deadline_at"]));

    const t = await expiry.waitFor(taskId, isTerminalTask, 15_000);
    // the provider's waiter failed and it answered with a denial; its late final text was discarded
    expect(t).toMatchObject({ status: "interrupted", error_code: "AGENT_INTERACTION_TIMED_OUT", pending_request: null, final_response: null });
    const types = (await allEvents(expiry.sock, taskId)).map((e) => [e.event_type, e.payload]);
    expect(types.slice(-2)).toEqual([
      ["interaction.expired", { request_id: request["request_id"], kind: "approval" }],
      ["task.interrupted", { error_code: "AGENT_INTERACTION_TIMED_OUT" }],
    ]);
    const late = await rpc(expiry.sock, "task.approval.respond", {
      task_id: taskId,
      request_id: request["request_id"],
      decision: "approve_once",
    });
    expect(codeOf(late)).toBe("REQUEST_STALE");
  }, 30_000);

  test("an unanswered question expires the same way", async () => {
    const taskId = await expiry.submit({ prompt: "question:Pick" });
    const pending = await expiry.waitFor(taskId, (t) => t["status"] === "waiting_for_question");
    const t = await expiry.waitFor(taskId, isTerminalTask, 15_000);
    expect(t).toMatchObject({ status: "interrupted", error_code: "AGENT_INTERACTION_TIMED_OUT" });
    const late = await rpc(expiry.sock, "task.question.answer", {
      task_id: taskId,
      request_id: pending["pending_request_id"],
      answers: [{ question_id: "q1", selected_option_ids: ["a"] }],
    });
    expect(codeOf(late)).toBe("REQUEST_STALE");
  }, 30_000);
});

describe("submission step 13.5 the active-task limit (max_active_tasks = 1)", () => {
  test("a submit beyond max_active_tasks is AGENT_TASK_LIMIT_REACHED; it is free again once the task ends", async () => {
    const taskId = await quiet.submit({ prompt: "wait:", idempotency_key: "k-limit" });
    const refused = await submitTask(quiet.sock, { prompt: "complete:x" });
    expect(codeOf(refused)).toBe("AGENT_TASK_LIMIT_REACHED");
    // a replay answers before the limit is ever counted
    expect((await submitTask(quiet.sock, { prompt: "wait:", idempotency_key: "k-limit" })).result).toMatchObject({ task_id: taskId });
    const writeRefused = await submitTask(quiet.sock, { prompt: "complete:x", profile: "workspace-write" });
    expect(codeOf(writeRefused)).toBe("AGENT_TASK_LIMIT_REACHED");
    await call(quiet.sock, "task.cancel", { task_id: taskId });
    // the refused write submit released its lease: a write task can take the slot now
    const next = await quiet.submit({ prompt: "complete:x", profile: "workspace-write" });
    expect(await quiet.waitFor(next, isTerminalTask)).toMatchObject({ status: "succeeded" });
  });
});

describe("retention GC", () => {
  /** Moves a task's completed_at back by `hours`, writing the database file the Bridge has open (WAL). */
  function age(taskId: string, hours: number): void {
    const db = new Database(join(quiet.env.stateDir, "state.sqlite3"));
    try {
      db.run("PRAGMA busy_timeout = 5000");
      const at = new Date(Date.now() - hours * 3_600_000).toISOString();
      db.query("UPDATE tasks SET completed_at = ? WHERE task_id = ?").run(at, taskId);
    } finally {
      db.close();
    }
  }

  function rowsOf(taskId: string): { tasks: number; events: number; requests: number } {
    const db = new Database(join(quiet.env.stateDir, "state.sqlite3"));
    try {
      const count = (sql: string) => db.query<{ n: number }, [string]>(sql).get(taskId)!.n;
      return {
        tasks: count("SELECT COUNT(*) AS n FROM tasks WHERE task_id = ?"),
        events: count("SELECT COUNT(*) AS n FROM events WHERE task_id = ?"),
        requests: count("SELECT COUNT(*) AS n FROM pending_requests WHERE task_id = ?"),
      };
    } finally {
      db.close();
    }
  }

  const finished = async (params: Record<string, unknown>) => {
    const taskId = await quiet.submit(params);
    return quiet.waitFor(taskId, isTerminalTask);
  };

  const spoolFile = (taskId: string) => join(quiet.env.stateDir, "results", `${taskId}.txt`);

  test("168 h retention GC including result-spool deletion: the pass a submit or a run's end starts collects the whole unit — row, events, requests and spool file", async () => {
    const spooled = await finished({ prompt: "repeat:262145:a", idempotency_key: "k-gc" });
    expect(spooled["result"]).toMatchObject({ storage: "spool" });
    const asked = await quiet.submit({ prompt: "approval:make" });
    const pending = await quiet.waitFor(asked, (t) => t["status"] === "waiting_for_approval");
    await call(quiet.sock, "task.approval.respond", { task_id: asked, request_id: pending["pending_request_id"], decision: "deny" });
    await quiet.waitFor(asked, isTerminalTask);
    const ids = [spooled["task_id"] as string, asked];
    // checked before the ageing: the pass that `asked`'s own end starts may run at any moment after it
    expect(existsSync(spoolFile(ids[0]!))).toBe(true);
    expect(rowsOf(asked)).toEqual({ tasks: 1, events: 4, requests: 1 });
    for (const id of ids) age(id, 169);

    const trigger = await finished({ prompt: "complete:trigger" });
    expect(trigger["status"]).toBe("succeeded");
    for (const id of ids) {
      expect(codeOf(await rpc(quiet.sock, "task.get", { task_id: id }))).toBe("AGENT_TASK_NOT_FOUND");
      expect(codeOf(await rpc(quiet.sock, "task.events", { task_id: id }))).toBe("AGENT_TASK_NOT_FOUND");
      expect(rowsOf(id)).toEqual({ tasks: 0, events: 0, requests: 0 });
    }
    expect(existsSync(spoolFile(ids[0]!))).toBe(false);
    // the collected task's idempotency key is free again
    const reused = await finished({ prompt: "repeat:262145:a", idempotency_key: "k-gc" });
    expect(reused["task_id"]).not.toBe(ids[0]);
  });

  test("a task completed less than 168 h ago is kept", async () => {
    const recent = await finished({ prompt: "complete:recent" });
    age(recent["task_id"] as string, 167);
    await finished({ prompt: "complete:trigger" });
    expect((await call(quiet.sock, "task.get", { task_id: recent["task_id"] }))["status"]).toBe("succeeded");
  });

  test("GC also runs on a cancel and at the end of every run, without any submit", async () => {
    const gone = (taskId: string) =>
      poll(async () => codeOf(await rpc(quiet.sock, "task.get", { task_id: taskId })) === "AGENT_TASK_NOT_FOUND", 15_000, `task ${taskId} collected`);
    const first = (await finished({ prompt: "complete:first" }))["task_id"] as string;
    const waiting = await quiet.submit({ prompt: "wait:" });
    await quiet.waitFor(waiting, (t) => t["status"] === "running");
    age(first, 169);
    await call(quiet.sock, "task.cancel", { task_id: waiting });
    await gone(first);

    const second = (await finished({ prompt: "complete:second" }))["task_id"] as string;
    const sleeper = await quiet.submit({ prompt: "sleep:300:done" });
    age(second, 169);
    await quiet.waitFor(sleeper, isTerminalTask);
    await gone(second);
  });

  test("GC skips a task a guard still names, and one whose spool entry is not a regular file", async () => {
    const guarded = (await finished({ prompt: "complete:guarded" }))["task_id"] as string;
    const blocked = (await finished({ prompt: "complete:blocked" }))["task_id"] as string;
    const guard = join(quiet.env.lockDir, "active", "09");
    const now = new Date().toISOString();
    writeFileSync(
      guard,
      `${canonicalJson({ schema_version: 1, slot: 9, task_id: guarded, runtime: "fake", workdir_alias: "repo", correlation_id: null, native_session_id: null, native_turn_id: null, provider_pgid: null, provider_start_time: null, provider_mark: null, created_at: now, updated_at: now })}\n`,
      { mode: 0o600 },
    );
    mkdirSync(spoolFile(blocked));
    try {
      age(guarded, 169);
      age(blocked, 169);
      await finished({ prompt: "complete:trigger" });
      expect(rowsOf(guarded).tasks).toBe(1);
      expect(rowsOf(blocked).tasks).toBe(1);
    } finally {
      rmSync(guard);
      rmSync(spoolFile(blocked), { recursive: true });
    }
    await finished({ prompt: "complete:trigger" });
    expect([rowsOf(guarded).tasks, rowsOf(blocked).tasks]).toEqual([0, 0]);
  });

  test("an active task is never collected, whatever its timestamps say", async () => {
    const active = await quiet.submit({ prompt: "wait:" });
    await quiet.waitFor(active, (t) => t["status"] === "running");
    age(active, 500);
    // the submit runs its GC pass (step 3) before it meets the limit (step 13.5)
    expect(codeOf(await submitTask(quiet.sock, { prompt: "complete:x" }))).toBe("AGENT_TASK_LIMIT_REACHED");
    expect((await call(quiet.sock, "task.get", { task_id: active }))["status"]).toBe("running");
    expect(rowsOf(active).tasks).toBe(1);
    await call(quiet.sock, "task.cancel", { task_id: active });
  });
});
