import { describe, expect, test } from "bun:test";
import { AuditLog } from "../../src/shared/audit.ts";
import { isServerFsError } from "../../src/shared/errors.ts";
import { type EventInput, Store } from "../../src/shared/store/index.ts";
import { insert, running, useStore } from "./store-fixtures.ts";

const fx = useStore();
const { store } = fx;

/** A payload whose compact JSON is exactly `bytes` bytes long. */
const payloadOf = (bytes: number) => ({ t: "x".repeat(bytes - '{"t":""}'.length) });
const many = (n: number, type = "agent.message"): EventInput[] => Array.from({ length: n }, () => ({ type, payload: {} }));
const types = (id: string) => store.listEvents(id, 0, 500).map((e) => e.event_type);

describe("envelope", () => {
  test("schema_version 1, the task's correlation_id, the parsed payload and the stored timestamp", () => {
    const id = running(store, { correlation_id: "corr-7" });
    const at = "2026-01-05T10:00:00.125Z";
    store.appendEvents(id, [{ type: "agent.message", payload: { text: "héllo", n: 1 }, at }]);
    const [e] = store.listEvents(id, 0, 10);
    expect(e).toEqual({
      schema_version: 1,
      event_id: e!.event_id,
      task_id: id,
      correlation_id: "corr-7",
      event_type: "agent.message",
      payload: { text: "héllo", n: 1 },
      created_at: at,
    });
  });

  test("an append without a time is stamped now in the fixed 24-character form", () => {
    const id = running(store);
    store.appendEvents(id, many(1));
    expect(store.listEvents(id, 0, 1)[0]!.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  test("event ids strictly increase in append order across tasks", () => {
    const a = running(store);
    const b = running(store);
    const ids = [a, b, a, b].map((t) => store.appendEvents(t, many(1)).lastEventId!);
    expect([...ids].sort((x, y) => x - y)).toEqual(ids);
    expect(new Set(ids).size).toBe(4);
  });
});

describe("appending and limits", () => {
  test("a batch is committed in order and the result names its last event id", () => {
    const id = running(store);
    const r = store.appendEvents(id, [
      { type: "turn.started", payload: {} },
      { type: "agent.message", payload: { text: "a" } },
      { type: "tool.started", payload: { tool: "x" } },
    ]);
    expect(r).toMatchObject({ appended: 3, broke: null, discarded: false });
    expect(r.lastEventId).toBe(store.maxEventId(id));
    expect(types(id)).toEqual(["turn.started", "agent.message", "tool.started"]);
    expect(store.getTask(id)!.event_count).toBe(3);
  });

  test("a 65,536-byte payload is kept; a 65,537-byte one is AGENT_EVENT_TOO_LARGE and drops the rest of its batch", () => {
    const id = running(store);
    const r = store.appendEvents(id, [
      { type: "agent.message", payload: payloadOf(65_536) },
      { type: "agent.message", payload: payloadOf(65_537) },
      { type: "tool.started", payload: {} },
    ]);
    expect(r).toMatchObject({ appended: 1, broke: "AGENT_EVENT_TOO_LARGE", discarded: false });
    expect(types(id)).toEqual(["agent.message"]);
    expect(store.getTask(id)!.event_count).toBe(1);
  });

  test("the size is measured in UTF-8 bytes of the compact encoding", () => {
    const id = running(store);
    // 21,845 × "€" is 65,535 bytes of text, far fewer UTF-16 units
    const r = store.appendEvents(id, [{ type: "agent.message", payload: { t: "€".repeat(21_845) } }]);
    expect(r.broke).toBe("AGENT_EVENT_TOO_LARGE");
    expect(r.appended).toBe(0);
  });

  test("a batch crossing 10,000 events keeps the events before the limit; event_count stops at 10,000", () => {
    const id = running(store);
    expect(store.appendEvents(id, many(9_998)).appended).toBe(9_998);
    const r = store.appendEvents(id, many(5, "tool.completed"));
    expect(r).toMatchObject({ appended: 2, broke: "AGENT_EVENT_LIMIT_REACHED", discarded: false });
    expect(store.getTask(id)!.event_count).toBe(10_000);
    expect(store.appendEvents(id, many(1))).toMatchObject({ appended: 0, broke: "AGENT_EVENT_LIMIT_REACHED" });
    expect(store.listEvents(id, 0, 500).length).toBe(500);
    expect(store.listEvents(id, store.maxEventId(id) - 3, 10).map((e) => e.event_type)).toEqual(["agent.message", "tool.completed", "tool.completed"]);
  });

  test("service events count too, and one that breaks the limit is dropped while the state change commits", () => {
    const id = running(store);
    store.appendEvents(id, many(9_999));
    const r = store.transition(id, "failed", {
      error: { code: "AGENT_EVENT_LIMIT_REACHED", message: "too many events" },
      events: [
        { type: "task.failed", payload: { error_code: "AGENT_EVENT_LIMIT_REACHED" } },
        { type: "task.extra", payload: {} },
      ],
    })!;
    expect(r.task.status).toBe("failed");
    expect(r.events).toMatchObject({ appended: 1, broke: "AGENT_EVENT_LIMIT_REACHED" });
    expect(r.task.event_count).toBe(10_000);
    expect(store.latestEvent(id, "task.failed")).not.toBeNull();
    expect(store.latestEvent(id, "task.extra")).toBeNull();
  });

  test("a too-large service event is dropped on its own; the next one is still appended", () => {
    const id = running(store);
    const r = store.transition(id, "cancelled", {
      events: [
        { type: "task.big", payload: payloadOf(65_537) },
        { type: "task.cancelled", payload: {} },
      ],
    })!;
    expect(r.task.status).toBe("cancelled");
    expect(r.events).toMatchObject({ appended: 1, broke: "AGENT_EVENT_TOO_LARGE" });
    expect(types(id)).toEqual(["task.cancelled"]);
  });

  test("with a log, a dropped service event is logged by whichever store dropped it; a provider batch's break is not", () => {
    const lines: string[] = [];
    const logged = Store.open(fx.stateDir, { log: new AuditLog("info", { write: (line) => lines.push(line) }) });
    try {
      const id = running(store);
      const batch = (n: number) => [many(n).map((e) => e.type), many(n).map((e) => JSON.stringify(e.payload))] as const;
      logged.appendProviderBatch(id, ...batch(9_999));
      expect(logged.appendProviderBatch(id, ...batch(2)).broke).toBe("AGENT_EVENT_LIMIT_REACHED");
      expect(lines).toEqual([]);
      logged.endTask(id, { to: "cancelled" });
      expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
        expect.objectContaining({ level: "WARN", event: "service_event_dropped", task_id: id, error_code: "AGENT_EVENT_LIMIT_REACHED" }),
      ]);
    } finally {
      logged.close();
    }
  });

  test("provider events for a terminal or unknown task are discarded; reconciliation events may still be appended", () => {
    const id = running(store);
    store.transition(id, "cancelled");
    expect(store.appendEvents(id, many(2))).toEqual({ appended: 0, lastEventId: null, broke: null, discarded: true });
    expect(types(id)).toEqual([]);
    const r = store.appendEvents(id, [{ type: "task.reconciled", payload: { status: "OPERATOR_CLEARED", provider_active: null } }], {
      allowTerminal: true,
    });
    expect(r.appended).toBe(1);
    expect(store.latestEvent(id, "task.reconciled")?.payload).toEqual({ status: "OPERATOR_CLEARED", provider_active: null });
    expect(store.appendEvents("agt_000000000000000000000000", many(1)).discarded).toBe(true);
  });
});

describe("reading", () => {
  test("the cursor is exclusive and ascending: following next ids never repeats or skips an event", () => {
    const id = insert(store);
    store.appendEvents(
      id,
      Array.from({ length: 7 }, (_, i) => ({ type: "agent.message", payload: { i } })),
    );
    const seen: number[] = [];
    let after = 0;
    for (let guard = 0; guard < 10; guard++) {
      const page = store.listEvents(id, after, 3);
      if (page.length === 0) break;
      seen.push(...page.map((e) => e.payload["i"] as number));
      after = page[page.length - 1]!.event_id;
    }
    expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(store.listEvents(id, store.maxEventId(id), 10)).toEqual([]);
  });

  test("maxEventId is 0 for a task without events", () => {
    expect(store.maxEventId(insert(store))).toBe(0);
  });

  test("after_event_id < 0 or limit outside 1..500 is INVALID_LIMIT", () => {
    const id = insert(store);
    for (const [after, limit] of [
      [-1, 10],
      [0, 0],
      [0, 501],
    ] as const) {
      let code: string | undefined;
      try {
        store.listEvents(id, after, limit);
      } catch (e) {
        code = isServerFsError(e) ? e.code : "other";
      }
      expect(code).toBe("INVALID_LIMIT");
    }
  });
});
