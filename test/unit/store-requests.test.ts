import { describe, expect, test } from "bun:test";
import { type OpenRequestInput, type RequestKind, Store } from "../../src/shared/store/index.ts";
import { codeOf, insert, isoIn, openStore, requestId, running, useStore } from "./store-fixtures.ts";

const fx = useStore();
const { store } = fx;

const APPROVAL = { category: "command", title: "run the tests", available_decisions: [] };
const QUESTION = {
  questions: [{ question_id: "q1", prompt: "which?", options: [{ option_id: "a", label: "A" }], multi_select: false, allow_free_text: false }],
};
const APPROVE = { decision: "approve_once" as const, granted_permission_ids: [] };
const ANSWER = { answers: [{ question_id: "q1", selected_option_ids: ["a"] }] };

function ask(taskId: string, kind: RequestKind = "approval", extra: Partial<OpenRequestInput> = {}) {
  const input: OpenRequestInput = {
    requestId: requestId(),
    taskId,
    kind,
    payload: kind === "approval" ? APPROVAL : QUESTION,
    expiresAt: isoIn(60_000),
    ...extra,
  };
  return store.openRequest(input);
}
const lastEvent = (taskId: string) => {
  const page = store.listEvents(taskId, store.maxEventId(taskId) - 1, 1);
  return page[0] ? { type: page[0].event_type, payload: page[0].payload } : null;
};

describe("opening a request", () => {
  test.each([
    ["approval", "waiting_for_approval", "approval.requested"],
    ["question", "waiting_for_question", "question.requested"],
  ] as const)("%s: the request is pending and the task moves to %s with the %s event", (kind, waiting, eventType) => {
    const id = running(store);
    const at = "2026-03-01T00:00:00.000Z";
    const expiresAt = "2026-03-01T01:00:00.000Z";
    const r = ask(id, kind, { at, expiresAt });
    expect(r.request).toMatchObject({
      task_id: id,
      kind,
      status: "pending",
      created_at: at,
      expires_at: expiresAt,
      resolved_at: null,
      resolution_json: null,
    });
    expect(JSON.parse(r.request.payload_json)).toEqual(kind === "approval" ? APPROVAL : QUESTION);
    expect(r.task).toMatchObject({ status: waiting, pending_request_id: r.request.request_id, updated_at: at });
    // the event says what is asked: summary and category (the title, for an approval), never more
    const said =
      kind === "approval"
        ? { summary: "run the tests", category: "command", title: "run the tests" }
        : { summary: "which?", category: "question", question_count: 1 };
    expect(lastEvent(id)).toEqual({ type: eventType, payload: { request_id: r.request.request_id, expires_at: expiresAt, ...said } });
  });

  test("REQUEST_PENDING when the task already has an open request; the first stays", () => {
    const id = running(store);
    const first = ask(id).request.request_id;
    expect(codeOf(() => ask(id))).toBe("REQUEST_PENDING");
    expect(store.getTask(id)).toMatchObject({ status: "waiting_for_approval", pending_request_id: first });
  });

  test("INVALID_TASK_TRANSITION when the task is not running", () => {
    const queued = insert(store);
    expect(codeOf(() => ask(queued))).toBe("INVALID_TASK_TRANSITION");
    const ended = running(store);
    store.transition(ended, "cancelled");
    expect(codeOf(() => ask(ended))).toBe("INVALID_TASK_TRANSITION");
    expect(store.getTask(queued)!.pending_request_id).toBeNull();
  });

  test("REQUEST_EXISTS on a request id clash; nothing changes for the second task", () => {
    const taken = ask(running(store)).request.request_id;
    const id = running(store);
    expect(codeOf(() => ask(id, "approval", { requestId: taken }))).toBe("REQUEST_EXISTS");
    expect(store.getTask(id)).toMatchObject({ status: "running", pending_request_id: null });
  });

  test("a 65,536-byte payload is accepted; one byte more is AGENT_INTERACTION_TOO_LARGE and opens nothing", () => {
    const payload = (bytes: number) => ({ title: "x".repeat(bytes - '{"title":""}'.length) });
    const id = running(store);
    const req = requestId();
    expect(codeOf(() => ask(id, "approval", { requestId: req, payload: payload(65_537) }))).toBe("AGENT_INTERACTION_TOO_LARGE");
    expect(store.getRequest(req)).toBeNull();
    expect(store.getTask(id)!.status).toBe("running");
    expect(ask(id, "approval", { payload: payload(65_536) }).task.status).toBe("waiting_for_approval");
  });

  test("AGENT_TASK_NOT_FOUND for an unknown task", () => {
    expect(codeOf(() => ask("agt_000000000000000000000000"))).toBe("AGENT_TASK_NOT_FOUND");
  });
});

describe("resolution (compare-and-swap)", () => {
  test("an approval is resolved with resolved_at and resolution, the task runs again, approval.resolved {decision}", () => {
    const id = running(store);
    const req = ask(id).request.request_id;
    const at = "2026-03-02T00:00:00.000Z";
    const r = store.resolveRequest(id, req, APPROVE, { at })!;
    expect(r.request).toMatchObject({ status: "resolved", resolved_at: at });
    expect(JSON.parse(r.request.resolution_json!)).toEqual(APPROVE);
    expect(r.task).toMatchObject({ status: "running", pending_request_id: null, updated_at: at });
    expect(lastEvent(id)).toEqual({ type: "approval.resolved", payload: { decision: "approve_once" } });
    expect(store.getTaskObject(id)!.pending_request).toBeNull();
  });

  test("a question is answered with question.answered {question_count}", () => {
    const id = running(store);
    const req = ask(id, "question").request.request_id;
    expect(store.resolveRequest(id, req, ANSWER)?.task.status).toBe("running");
    expect(lastEvent(id)).toEqual({ type: "question.answered", payload: { question_count: 1 } });
  });

  test("a second resolution changes nothing, also from another connection", () => {
    const other = Store.open(fx.stateDir);
    try {
      const id = running(store);
      const req = ask(id).request.request_id;
      expect(store.resolveRequest(id, req, APPROVE)).not.toBeNull();
      const events = store.maxEventId(id);
      expect(other.resolveRequest(id, req, { decision: "deny", granted_permission_ids: [] })).toBeNull();
      expect(store.resolveRequest(id, req, APPROVE)).toBeNull();
      expect(JSON.parse(store.getRequest(req)!.resolution_json!)).toEqual(APPROVE);
      expect(store.maxEventId(id)).toBe(events);
    } finally {
      other.close();
    }
  });

  test("a resolution after the request went stale or its task ended fails", () => {
    const withdrawn = running(store);
    const r1 = ask(withdrawn).request.request_id;
    store.staleRequest(withdrawn, r1, "withdrawn");
    expect(store.resolveRequest(withdrawn, r1, APPROVE)).toBeNull();

    const expired = running(store);
    const r2 = ask(expired).request.request_id;
    store.staleRequest(expired, r2, "expired");
    expect(store.resolveRequest(expired, r2, APPROVE)).toBeNull();

    const ended = running(store);
    const r3 = ask(ended).request.request_id;
    store.transition(ended, "cancelled");
    expect(store.resolveRequest(ended, r3, APPROVE)).toBeNull();
    expect(store.getRequest(r3)?.status).toBe("stale");
  });

  test("a request is resolved only through its own task", () => {
    const id = running(store);
    const req = ask(id).request.request_id;
    expect(store.resolveRequest(running(store), req, APPROVE)).toBeNull();
    expect(store.getRequest(req)?.status).toBe("pending");
  });

  test("a resolution that does not fit the request's kind is a programming error and changes nothing", () => {
    const id = running(store);
    const req = ask(id, "question").request.request_id;
    expect(() => store.resolveRequest(id, req, APPROVE)).toThrow(TypeError);
    expect(store.getRequest(req)?.status).toBe("pending");
  });
});

describe("withdrawn requests", () => {
  test("the request becomes stale, the task returns to running, interaction.stale {request_id}; only once", () => {
    const id = running(store);
    const req = ask(id, "question").request.request_id;
    const r = store.staleRequest(id, req, "withdrawn")!;
    expect(r.request.status).toBe("stale");
    expect(r.request.resolved_at).not.toBeNull();
    expect(r.task).toMatchObject({ status: "running", pending_request_id: null });
    expect(lastEvent(id)).toEqual({ type: "interaction.stale", payload: { request_id: req } });
    const events = store.maxEventId(id);
    expect(store.staleRequest(id, req, "withdrawn")).toBeNull();
    expect(store.maxEventId(id)).toBe(events);
  });
});

describe("interaction expiry", () => {
  test("stale with resolved_at, pending_request_id cleared, interaction.expired {request_id, kind}; the task still waits", () => {
    const id = running(store);
    const req = ask(id).request.request_id;
    const at = "2026-03-03T00:00:00.000Z";
    const r = store.staleRequest(id, req, "expired", { at })!;
    expect(r.request).toMatchObject({ status: "stale", resolved_at: at });
    expect(r.task).toMatchObject({ status: "waiting_for_approval", pending_request_id: null });
    expect(lastEvent(id)).toEqual({ type: "interaction.expired", payload: { request_id: req, kind: "approval" } });
    const ended = store.transition(id, "interrupted", {
      error: { code: "AGENT_INTERACTION_TIMED_OUT", message: "the request expired" },
    });
    expect(ended?.task.status).toBe("interrupted");
  });

  test("racing expiries (timer, sweep, another thread) expire a request once; only the winner emits", () => {
    const other = Store.open(fx.stateDir);
    try {
      const id = running(store);
      const req = ask(id, "question").request.request_id;
      expect(store.staleRequest(id, req, "expired")).not.toBeNull();
      expect(other.staleRequest(id, req, "expired")).toBeNull();
      expect(other.staleRequest(id, req, "withdrawn")).toBeNull();
      expect(store.listEvents(id, 0, 10).filter((e) => e.event_type === "interaction.expired")).toHaveLength(1);
    } finally {
      other.close();
    }
  });

  test("listPendingWithExpiry lists the pending requests, earliest expiry first, whatever the wall clock says", () => {
    const own = openStore();
    try {
      const s = own.store;
      const open = (expiresAt: string) => s.openRequest({ requestId: requestId(), taskId: running(s), kind: "approval", payload: APPROVAL, expiresAt }).request;
      const later = open("2026-01-01T00:00:02.000Z");
      const earlier = open("2026-01-01T00:00:01.000Z");
      const future = open("2999-01-01T00:00:09.000Z");
      const resolved = open("2026-01-01T00:00:00.500Z");
      s.resolveRequest(resolved.task_id, resolved.request_id, APPROVE);
      expect(s.listPendingWithExpiry().map((r) => r.request_id)).toEqual([earlier.request_id, later.request_id, future.request_id]);
    } finally {
      own.close();
    }
  });
});
