import { Database } from "bun:sqlite";
import { beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { canonicalJson, sha256Hex } from "../../src/shared/canonical-json.ts";
import { Store, TASK_STATUSES, type TaskStatus, TRANSITIONS, type TransitionOptions, type TransitionTarget } from "../../src/shared/store/index.ts";
import { TASK_OBJECT_FIELDS } from "../helpers/contract-shapes.ts";
import { codeOf, insert, isoIn, newTask, openStore, requestId, running, useStore } from "./store-fixtures.ts";

const fx = useStore();
const { store } = fx;

const ERROR = { code: "AGENT_PROVIDER_ERROR", message: "agent runtime failed" } as const;
/** The options a target needs: an error exactly for failed / interrupted. */
const optsFor = (to: TransitionTarget, extra: TransitionOptions = {}): TransitionOptions =>
  to === "failed" || to === "interrupted" ? { error: ERROR, ...extra } : extra;

/** A task driven through real transitions (and a real request for the waiting states) to `status`. */
function reach(s: Store, status: TaskStatus): string {
  if (status === "queued") return insert(s);
  if (status === "starting") {
    const id = insert(s);
    s.transition(id, "starting");
    return id;
  }
  const id = running(s);
  if (status === "waiting_for_approval" || status === "waiting_for_question") {
    const kind = status === "waiting_for_approval" ? "approval" : "question";
    s.openRequest({ requestId: requestId(), taskId: id, kind, payload: {}, expiresAt: isoIn(60_000) });
  } else if (status !== "running") {
    s.transition(id, status, optsFor(status as TransitionTarget));
  }
  expect(s.getTask(id)!.status).toBe(status);
  return id;
}

const GENERIC_TARGETS: TransitionTarget[] = ["starting", "running", "succeeded", "failed", "cancelled", "interrupted"];

describe("submission step 13.5 insert", () => {
  test("a new task is queued with the given facts, created_at = updated_at, and nothing else set", () => {
    const row = newTask({ correlation_id: "c-1", idempotency_key: null, relative_cwd: "src" });
    const r = store.insertTask(row, 1_000);
    expect(r.kind).toBe("inserted");
    const t = store.getTask(row.task_id)!;
    expect(t).toMatchObject({ ...row, status: "queued", updated_at: row.created_at });
    expect(t).toMatchObject({
      started_at: null,
      completed_at: null,
      native_session_id: null,
      provider_pgid: null,
      final_response: null,
      result_storage: "inline",
      error_code: null,
      pending_request_id: null,
      event_count: 0,
    });
  });

  test("AGENT_TASK_LIMIT_REACHED when the active count is already at the limit; terminal tasks do not count", () => {
    const active = store.listActive().length;
    expect(codeOf(() => store.insertTask(newTask(), active))).toBe("AGENT_TASK_LIMIT_REACHED");
    const id = insert(store);
    store.transition(id, "cancelled");
    expect(store.listActive()).toHaveLength(active);
    expect(store.insertTask(newTask(), active + 1).kind).toBe("inserted");
  });

  test("a taken idempotency key is a result carrying the existing task, and nothing is inserted", () => {
    const first = newTask({ idempotency_key: "key-dup" });
    store.insertTask(first, 1_000);
    const second = newTask({ idempotency_key: "key-dup" });
    const r = store.insertTask(second, 1_000);
    expect(r.kind).toBe("idempotency_key_taken");
    if (r.kind === "idempotency_key_taken") expect(r.existing.task_id).toBe(first.task_id);
    expect(store.getTask(second.task_id)).toBeNull();
    expect(store.findByIdempotencyKey("key-dup")?.task_id).toBe(first.task_id);
  });

  test("AGENT_TASK_EXISTS when the generated id is already present", () => {
    const row = newTask();
    store.insertTask(row, 1_000);
    expect(codeOf(() => store.insertTask({ ...newTask(), task_id: row.task_id }, 1_000))).toBe("AGENT_TASK_EXISTS");
  });
});

describe("task.list and active listing", () => {
  const own = useStore();
  const ids: string[] = [];
  beforeAll(() => {
    // three share one created_at, so the task_id tie-break decides among them
    const stamps = ["2026-01-01T00:00:01.000Z", "2026-01-01T00:00:02.000Z", "2026-01-01T00:00:02.000Z", "2026-01-01T00:00:02.000Z", "2026-01-01T00:00:03.000Z"];
    for (const created_at of stamps) ids.push(insert(own.store, { created_at }));
    own.store.transition(ids[4]!, "cancelled");
  });
  const newestFirst = () =>
    [...ids].sort((a, b) => {
      const ta = own.store.getTask(a)!.created_at;
      const tb = own.store.getTask(b)!.created_at;
      return ta === tb ? (a < b ? 1 : -1) : ta < tb ? 1 : -1;
    });

  test("newest first by created_at, then task_id; pages follow next_before_task_id without repeats or gaps", () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = own.store.listTasks({ limit: 2, beforeTaskId: cursor });
      seen.push(...page.tasks.map((t) => t.task_id));
      cursor = page.nextBeforeTaskId;
      pages++;
    } while (cursor !== null && pages < 10);
    expect(seen).toEqual(newestFirst());
    expect(pages).toBe(3);
  });

  test("the last page has next_before_task_id null, also when it is exactly full", () => {
    expect(own.store.listTasks({ limit: 5 }).nextBeforeTaskId).toBeNull();
    expect(own.store.listTasks({ limit: 4 }).nextBeforeTaskId).not.toBeNull();
  });

  test("task.list pages are the task object task objects in the same order", () => {
    const page = own.store.listTaskObjects({ limit: 3 });
    expect(page.tasks.map((t) => t.task_id)).toEqual(newestFirst().slice(0, 3));
    expect(page.tasks[0]).toEqual(own.store.getTaskObject(page.tasks[0]!.task_id)!);
    expect(page.nextBeforeTaskId).toBe(page.tasks[2]!.task_id);
  });

  test("a status filter lists only that status", () => {
    expect(own.store.listTasks({ status: "cancelled" }).tasks.map((t) => t.task_id)).toEqual([ids[4]!]);
    expect(own.store.listTasks({ status: "queued" }).tasks).toHaveLength(4);
  });

  test("limit outside 1..500 is INVALID_LIMIT; an unknown cursor is AGENT_TASK_NOT_FOUND", () => {
    for (const limit of [0, 501, 1.5]) expect(codeOf(() => own.store.listTasks({ limit }))).toBe("INVALID_LIMIT");
    expect(own.store.listTasks({ limit: 500 }).tasks).toHaveLength(5);
    expect(codeOf(() => own.store.listTasks({ beforeTaskId: "agt_000000000000000000000000" }))).toBe("AGENT_TASK_NOT_FOUND");
  });

  test("active tasks are listed oldest first by created_at and counted; terminal ones are not", () => {
    expect(own.store.listActive().map((t) => t.task_id)).toEqual(newestFirst().slice(1).reverse());
    expect(own.store.listActive()).toHaveLength(4);
  });
});

describe("transition table", () => {
  const allowed = TASK_STATUSES.flatMap((from) =>
    TRANSITIONS[from]
      .filter((to) => GENERIC_TARGETS.includes(to as TransitionTarget) && !(to === "running" && from !== "starting"))
      .map((to) => [from, to] as const),
  );

  test.each(allowed)("%s → %s is allowed", (from, to) => {
    const id = reach(store, from);
    const r = store.transition(id, to as TransitionTarget, optsFor(to as TransitionTarget));
    expect(r?.task.status).toBe(to);
    expect(store.getTask(id)!.status).toBe(to);
  });

  const refused = TASK_STATUSES.flatMap((from) => GENERIC_TARGETS.filter((to) => !TRANSITIONS[from].includes(to)).map((to) => [from, to] as const));
  test.each(refused)("%s → %s changes nothing (null)", (from, to) => {
    const id = reach(store, from);
    const before = store.getTask(id)!;
    expect(store.transition(id, to, optsFor(to))).toBeNull();
    expect(store.getTask(id)).toEqual(before);
  });

  test("a waiting task returns to running only through its request, never through transition()", () => {
    const id = reach(store, "waiting_for_approval");
    expect(store.transition(id, "running")).toBeNull();
    expect(store.getTask(id)!.status).toBe("waiting_for_approval");
  });

  test("a target the table can never reach from the given sources is INVALID_TASK_TRANSITION", () => {
    const id = reach(store, "queued");
    expect(codeOf(() => store.transition(id, "succeeded", { from: ["queued"] }))).toBe("INVALID_TASK_TRANSITION");
    for (const to of ["queued", "waiting_for_approval", "waiting_for_question"]) {
      expect(codeOf(() => store.transition(id, to as TransitionTarget))).toBe("INVALID_TASK_TRANSITION");
    }
    expect(store.getTask(id)!.status).toBe("queued");
  });

  test("`from` narrows the sources: a task outside them is left as it is", () => {
    const id = reach(store, "starting");
    expect(store.transition(id, "cancelled", { from: ["running"] })).toBeNull();
    expect(store.transition(id, "cancelled", { from: ["starting", "running"] })?.task.status).toBe("cancelled");
  });

  test("an error is required exactly for failed and interrupted", () => {
    const id = reach(store, "running");
    expect(() => store.transition(id, "failed")).toThrow(TypeError);
    expect(() => store.transition(id, "cancelled", { error: ERROR })).toThrow(TypeError);
    expect(store.getTask(id)!.status).toBe("running");
  });

  test("a lost race between two connections: the first terminal move wins, the second changes nothing", () => {
    const other = Store.open(fx.stateDir);
    try {
      const id = reach(store, "running");
      const cancel = store.transition(id, "cancelled", { events: [{ type: "task.cancelled", payload: {} }] });
      const fail = other.transition(id, "failed", {
        error: ERROR,
        events: [{ type: "task.failed", payload: { error_code: ERROR.code } }],
      });
      expect(cancel?.task.status).toBe("cancelled");
      expect(fail).toBeNull();
      const t = other.getTask(id)!;
      expect(t).toMatchObject({ status: "cancelled", error_code: null, error_message: null });
      expect(other.listEvents(id, 0, 10).map((e) => e.event_type)).toEqual(["task.cancelled"]);
    } finally {
      other.close();
    }
  });
});

describe("effects of a transition", () => {
  test("each move sets updated_at; queued → starting sets started_at; a terminal move sets completed_at", () => {
    const id = insert(store, { created_at: "2026-01-01T00:00:00.000Z" });
    store.transition(id, "starting", { at: "2026-01-01T00:00:01.000Z" });
    expect(store.getTask(id)).toMatchObject({ started_at: "2026-01-01T00:00:01.000Z", updated_at: "2026-01-01T00:00:01.000Z" });
    store.transition(id, "running", { at: "2026-01-01T00:00:02.000Z" });
    expect(store.getTask(id)).toMatchObject({ started_at: "2026-01-01T00:00:01.000Z", updated_at: "2026-01-01T00:00:02.000Z", completed_at: null });
    store.transition(id, "succeeded", {
      at: "2026-01-01T00:00:03.000Z",
      set: { final_response: "done", result_storage: "inline", result_size_bytes: 4, result_sha256: sha256Hex("done") },
      events: [{ type: "task.completed", payload: { result_storage: "inline", result_size_bytes: 4 } }],
    });
    expect(store.getTask(id)).toMatchObject({
      status: "succeeded",
      updated_at: "2026-01-01T00:00:03.000Z",
      completed_at: "2026-01-01T00:00:03.000Z",
      final_response: "done",
      result_storage: "inline",
      result_size_bytes: 4,
      result_sha256: sha256Hex("done"),
      error_code: null,
      error_message: null,
    });
  });

  test("failed / interrupted set error_code and an error_message cut to 4,096 UTF-8-safe bytes", () => {
    const id = reach(store, "running");
    const message = "é".repeat(3000); // 6,000 bytes; 4,096 falls between the two bytes of one "é"
    store.transition(id, "failed", { error: { code: "AGENT_PROVIDER_ERROR", message } });
    const t = store.getTask(id)!;
    expect(t.error_code).toBe("AGENT_PROVIDER_ERROR");
    expect(t.error_message).toBe("é".repeat(2048));
    expect(Buffer.byteLength(t.error_message!)).toBe(4096);

    const short = reach(store, "queued");
    store.transition(short, "interrupted", { error: { code: "BRIDGE_SHUTDOWN", message: "the bridge stopped" } });
    expect(store.getTask(short)).toMatchObject({ error_code: "BRIDGE_SHUTDOWN", error_message: "the bridge stopped" });
  });

  test("entering a terminal state clears pending_request_id and stales the pending request in the same transaction, with the event", () => {
    const id = reach(store, "waiting_for_question");
    const req = store.getTask(id)!.pending_request_id!;
    const r = store.transition(id, "interrupted", {
      at: "2026-02-02T00:00:00.000Z",
      error: { code: "AGENT_TASK_TIMED_OUT", message: "the task deadline passed" },
      events: [{ type: "task.interrupted", payload: { error_code: "AGENT_TASK_TIMED_OUT" } }],
    })!;
    expect(r.task).toMatchObject({ status: "interrupted", pending_request_id: null, completed_at: "2026-02-02T00:00:00.000Z" });
    expect(store.getRequest(req)).toMatchObject({ status: "stale", resolved_at: "2026-02-02T00:00:00.000Z" });
    expect(r.events).toMatchObject({ appended: 1, broke: null, discarded: false });
    expect(store.listEvents(id, 0, 10).map((e) => e.event_type)).toEqual(["question.requested", "task.interrupted"]);
  });

  test("the state change, the request staling and the event commit together or not at all", () => {
    const id = reach(store, "waiting_for_approval");
    const req = store.getTask(id)!.pending_request_id!;
    // a lifecycle event whose payload cannot be encoded makes the whole transaction roll back
    const cyclic: Record<string, unknown> = {};
    cyclic["self"] = cyclic;
    expect(() => store.transition(id, "cancelled", { events: [{ type: "task.cancelled", payload: cyclic }] })).toThrow();
    expect(store.getTask(id)).toMatchObject({ status: "waiting_for_approval", pending_request_id: req, completed_at: null });
    expect(store.getRequest(req)?.status).toBe("pending");
  });
});

describe("ending a task with its lifecycle event", () => {
  const payloads = (id: string) => store.listEvents(id, 0, 10).map((e) => [e.event_type, e.payload]);

  test("cancelled appends task.cancelled; failed and interrupted append their event with the error code and set the error", () => {
    const cancelled = reach(store, "running");
    expect(store.endTask(cancelled, { to: "cancelled" })?.task.status).toBe("cancelled");
    expect(payloads(cancelled)).toEqual([["task.cancelled", {}]]);

    const failed = reach(store, "running");
    store.endTask(failed, { to: "failed", error: ERROR });
    expect(store.getTask(failed)).toMatchObject({ status: "failed", error_code: ERROR.code, error_message: ERROR.message });
    expect(payloads(failed)).toEqual([["task.failed", { error_code: ERROR.code }]]);

    const interrupted = reach(store, "queued");
    store.endTask(interrupted, { to: "interrupted", error: { code: "BRIDGE_SHUTDOWN", message: "the Bridge stopped" } });
    expect(store.getTask(interrupted)).toMatchObject({ status: "interrupted", error_code: "BRIDGE_SHUTDOWN" });
    expect(payloads(interrupted)).toEqual([["task.interrupted", { error_code: "BRIDGE_SHUTDOWN" }]]);
  });

  test("`before` events come first in the same transaction; `from` leaves a task outside it as it is", () => {
    const id = reach(store, "running");
    const reconciled = { type: "task.reconciled", payload: { status: "GONE" } };
    expect(store.endTask(id, { to: "interrupted", error: ERROR }, { from: ["queued"], before: [reconciled] })).toBeNull();
    expect(store.getTask(id)?.status).toBe("running");
    expect(payloads(id)).toEqual([]);
    store.endTask(id, { to: "interrupted", error: ERROR }, { from: ["running"], before: [reconciled] });
    expect(payloads(id)).toEqual([
      ["task.reconciled", { status: "GONE" }],
      ["task.interrupted", { error_code: ERROR.code }],
    ]);
  });
});

describe("provider facts", () => {
  test("recorded with COALESCE: a null or absent value never overwrites, a new value does", () => {
    const id = reach(store, "starting");
    store.recordProvider(id, { mark: "ab".repeat(16) });
    store.recordProvider(id, { pgid: 4242, startTime: 987654321 });
    store.recordProvider(id, { nativeSessionId: "thread-1", nativeTurnId: "turn-1", pgid: null, mark: null });
    const t = store.recordProvider(id, { nativeTurnId: "turn-2" })!;
    expect(t).toMatchObject({
      provider_mark: "ab".repeat(16),
      provider_pgid: 4242,
      provider_start_time: 987654321,
      native_session_id: "thread-1",
      native_turn_id: "turn-2",
    });
    expect(store.recordProvider("agt_000000000000000000000000", { pgid: 1 })).toBeNull();
  });
});

describe("task object", () => {
  test("has exactly the task object fields and never native ids, provider fields or the fingerprint", () => {
    const row = newTask({ idempotency_key: "obj-key", request_fingerprint: "f".repeat(64), correlation_id: "corr" });
    store.insertTask(row, 1_000);
    store.recordProvider(row.task_id, { pgid: 77, startTime: 5, mark: "c".repeat(32), nativeSessionId: "sess-secret", nativeTurnId: "turn-secret" });
    const o = store.getTaskObject(row.task_id)!;
    expect(Object.keys(o).sort()).toEqual([...TASK_OBJECT_FIELDS].sort());
    const text = JSON.stringify(o);
    for (const hidden of ["sess-secret", "turn-secret", "f".repeat(64), "c".repeat(32), "provider_", "native_", "request_fingerprint"]) {
      expect(text).not.toContain(hidden);
    }
    expect(o).toMatchObject({ correlation_id: "corr", idempotency_key: "obj-key", pending_request: null });
  });

  test("the manifest is parsed from manifest_json, and canonicalizing it again reproduces manifest_sha256", () => {
    const id = insert(store);
    const o = store.getTaskObject(id)!;
    expect(o.manifest?.schema_version).toBe(1);
    expect(sha256Hex(canonicalJson(o.manifest))).toBe(o.manifest_sha256!);
  });

  test("a spooled result is truncated and retrievable; an inline one is neither", () => {
    const spooled = reach(store, "running");
    store.transition(spooled, "succeeded", {
      set: { final_response: "preview", result_storage: "spool", result_size_bytes: 300_000, result_sha256: "a".repeat(64) },
    });
    expect(store.getTaskObject(spooled)).toMatchObject({
      final_response: "preview",
      final_response_truncated: true,
      result: { storage: "spool", size_bytes: 300_000, sha256: "a".repeat(64), retrievable: true },
    });
    const fresh = store.getTaskObject(insert(store))!;
    expect(fresh).toMatchObject({
      final_response: null,
      final_response_truncated: false,
      result: { storage: "inline", size_bytes: null, sha256: null, retrievable: false },
    });
  });

  test("pending_request is the human-in-the-loop requests request object while pending_request_id is set", () => {
    const id = reach(store, "running");
    const req = requestId();
    const expiresAt = isoIn(60_000);
    store.openRequest({ requestId: req, taskId: id, kind: "approval", payload: { category: "command", title: "t", available_decisions: [] }, expiresAt });
    const o = store.getTaskObject(id)!;
    expect(o.pending_request_id).toBe(req);
    expect(o.pending_request).toEqual({
      request_id: req,
      task_id: id,
      kind: "approval",
      status: "pending",
      payload: { category: "command", title: "t", available_decisions: [] },
      created_at: o.pending_request!.created_at,
      expires_at: expiresAt,
      resolved_at: null,
      resolution: null,
    });
    expect(store.getTaskObject("agt_000000000000000000000000")).toBeNull();
  });
});

describe("retention GC", () => {
  test("candidates are terminal tasks completed before the cutoff, oldest first, bounded by the limit", () => {
    const own = openStore();
    try {
      const s = own.store;
      const old = (completedAt: string) => {
        const id = reach(s, "running");
        s.transition(id, "cancelled", { at: completedAt });
        return id;
      };
      const b = old("2026-01-01T00:00:02.000Z");
      const a = old("2026-01-01T00:00:01.000Z");
      old("2026-01-01T00:00:09.000Z");
      insert(s, { created_at: "2000-01-01T00:00:00.000Z" }); // ancient but active: never a candidate
      expect(s.gcCandidates("2026-01-01T00:00:05.000Z", 10).map((t) => t.task_id)).toEqual([a, b]);
      expect(s.gcCandidates("2026-01-01T00:00:05.000Z", 1).map((t) => t.task_id)).toEqual([a]);
      expect(s.gcCandidates("2026-01-01T00:00:01.000Z", 10)).toEqual([]);
    } finally {
      own.close();
    }
  });

  test("deleting a terminal task removes its row, events and requests; an active task is never deleted", () => {
    const id = reach(store, "waiting_for_approval");
    expect(store.deleteTask(id)).toBe(false);
    store.transition(id, "cancelled", { events: [{ type: "task.cancelled", payload: {} }] });
    const key = "gc-key";
    const keyed = insert(store, { idempotency_key: key });
    store.transition(keyed, "cancelled");

    const count = (sql: string, arg: string) => {
      const raw = new Database(join(fx.stateDir, "state.sqlite3"), { readonly: true });
      try {
        return raw.query<{ n: number }, [string]>(sql).get(arg)!.n;
      } finally {
        raw.close();
      }
    };
    expect(count("SELECT COUNT(*) AS n FROM events WHERE task_id = ?", id)).toBeGreaterThan(0);
    expect(count("SELECT COUNT(*) AS n FROM pending_requests WHERE task_id = ?", id)).toBe(1);

    expect(store.deleteTask(id)).toBe(true);
    expect(store.getTask(id)).toBeNull();
    expect(count("SELECT COUNT(*) AS n FROM events WHERE task_id = ?", id)).toBe(0);
    expect(count("SELECT COUNT(*) AS n FROM pending_requests WHERE task_id = ?", id)).toBe(0);
    expect(store.deleteTask(id)).toBe(false);

    // the key of a collected task is free again (docs/task-model.md#submission step 6)
    expect(store.deleteTask(keyed)).toBe(true);
    expect(store.insertTask(newTask({ idempotency_key: key }), 1_000).kind).toBe("inserted");
  });
});
