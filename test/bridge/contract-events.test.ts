/**
 * Bridge contract, events (docs/events.md): envelope schema version 1, correlation_id
 * copied into every envelope and read, the exclusive cursor, the long poll and the per-task limit,
 * all through the real Bridge process and the fake runtime.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../../src/shared/canonical-json.ts";
import { allEvents, call, codeOf, type EventEnvelope, isTerminalTask, rpc, submitTask } from "../helpers/bridge.ts";
import { poll } from "../helpers/poll.ts";
import { useBridge } from "../helpers/use-bridge.ts";

const { env, sock, bridge, submit, waitFor } = useBridge();

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const types = (events: EventEnvelope[]) => events.map((e) => e.event_type);

/**
 * A long poll's wait in these tests: far longer than anything they do, so a poll that answers in less
 * than half of it answered early, and one still waiting at a later point cannot have timed out.
 */
const LONG_WAIT_MS = 20_000;

/** Events of the task after `after`, long-polling up to `waitMs`; resolves with the page and the time it took. */
async function longPoll(taskId: string, after: number, waitMs: number) {
  const started = Date.now();
  const page = await call<{ events: EventEnvelope[]; next_after_event_id: number }>(sock, "task.events", {
    task_id: taskId,
    after_event_id: after,
    wait_ms: waitMs,
  });
  return { ...page, elapsed: Date.now() - started };
}

/** Waits until the task has an event of `type`; returns the id of the last event seen. */
async function untilEvent(taskId: string, type: string): Promise<number> {
  let events: EventEnvelope[] = [];
  await poll(
    async () => {
      events = await allEvents(sock, taskId);
      return events.some((e) => e.event_type === type);
    },
    15_000,
    `a ${type} event`,
  );
  return events.at(-1)!.event_id;
}

describe("envelope (schema version 1) and correlation propagation", () => {
  test("every envelope has exactly the seven keys, schema_version 1 and a fixed-form created_at", async () => {
    const taskId = await submit({ prompt: "events:3" });
    await waitFor(taskId, isTerminalTask);
    const events = await allEvents(sock, taskId);
    expect(types(events)).toEqual(["task.started", "agent.message", "agent.message", "agent.message", "task.completed"]);
    for (const e of events) {
      expect(Object.keys(e).sort()).toEqual(["correlation_id", "created_at", "event_id", "event_type", "payload", "schema_version", "task_id"]);
      expect(e).toMatchObject({ schema_version: 1, task_id: taskId, correlation_id: null });
      expect(e.created_at).toMatch(TIMESTAMP);
    }
    expect(events.map((e) => e.payload)).toEqual([
      { runtime: "fake", model: null, effort: null, max_budget_usd: null },
      { text: "event 1" },
      { text: "event 2" },
      { text: "event 3" },
      { result_storage: "inline", result_size_bytes: 8 },
    ]);
  });

  test("event ids are global and strictly increasing in append order across tasks", async () => {
    const a = await submit({ prompt: "complete:a" });
    await waitFor(a, isTerminalTask);
    const b = await submit({ prompt: "complete:b" });
    await waitFor(b, isTerminalTask);
    const ids = [...(await allEvents(sock, a)), ...(await allEvents(sock, b))].map((e) => e.event_id);
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(new Set(ids).size).toBe(ids.length);
  });

  test("event envelope schema_version=1 and correlation propagation: every envelope, the events read, the task, its manifest, its guard and every result", async () => {
    const correlation = "corr-ü-\u{1F600}-42";
    const r = await submitTask(sock, { prompt: "approval:make test", profile: "workspace-write", correlation_id: correlation });
    expect(r.result!["correlation_id"]).toBe(correlation);
    const taskId = r.result!["task_id"] as string;
    const waiting = await waitFor(taskId, (t) => t["status"] === "waiting_for_approval");
    expect(waiting["correlation_id"]).toBe(correlation);
    expect((waiting["manifest"] as Record<string, unknown>)["correlation_id"]).toBe(correlation);
    const guard = JSON.parse(readFileSync(join(env.lockDir, "active", "01"), "utf8")) as Record<string, unknown>;
    expect(guard).toMatchObject({ task_id: taskId, correlation_id: correlation });

    const requestId = waiting["pending_request_id"] as string;
    const resolved = await call(sock, "task.approval.respond", { task_id: taskId, request_id: requestId, decision: "approve_once" });
    expect(resolved).toEqual({ task_id: taskId, request_id: requestId, resolved: true, correlation_id: correlation });
    await waitFor(taskId, isTerminalTask);
    expect(await call(sock, "task.cancel", { task_id: taskId })).toEqual({ task_id: taskId, status: "succeeded", correlation_id: correlation });

    const page = await call<{ correlation_id: string; events: EventEnvelope[] }>(sock, "task.events", { task_id: taskId });
    expect(page.correlation_id).toBe(correlation);
    expect(types(page.events)).toEqual(["task.started", "approval.requested", "approval.resolved", "task.completed"]);
    for (const e of page.events) expect([e.schema_version, e.correlation_id]).toEqual([1, correlation]);
  });
});

describe("reading: cursor, limits, long poll", () => {
  test("the exclusive cursor pages without repeating or skipping; next_after_event_id is the last id or the input; last_event_id is the task's newest on every page", async () => {
    const taskId = await submit({ prompt: "events:7" });
    await waitFor(taskId, isTerminalTask);
    const all = await allEvents(sock, taskId);
    expect(all).toHaveLength(9);
    const paged: EventEnvelope[] = [];
    let after = 0;
    for (let i = 0; i < 20; i++) {
      const page = await call<{ events: EventEnvelope[]; next_after_event_id: number; last_event_id: number }>(sock, "task.events", {
        task_id: taskId,
        after_event_id: after,
        limit: 4,
      });
      expect(page.events.length).toBeLessThanOrEqual(4);
      expect(page.last_event_id).toBe(all.at(-1)!.event_id);
      if (page.events.length === 0) {
        expect(page.next_after_event_id).toBe(after);
        break;
      }
      expect(page.next_after_event_id).toBe(page.events[page.events.length - 1]!.event_id);
      paged.push(...page.events);
      after = page.next_after_event_id;
    }
    expect(paged).toEqual(all);
  });

  test("INVALID_LIMIT for after_event_id < 0, limit outside 1..500, wait_ms outside 0..25000; an unknown task is checked first", async () => {
    const taskId = await submit({ prompt: "complete:x" });
    await waitFor(taskId, isTerminalTask);
    for (const bad of [{ after_event_id: -1 }, { limit: 0 }, { limit: 501 }, { wait_ms: -1 }, { wait_ms: 25_001 }]) {
      expect(codeOf(await rpc(sock, "task.events", { task_id: taskId, ...bad }))).toBe("INVALID_LIMIT");
    }
    expect(codeOf(await rpc(sock, "task.events", { task_id: taskId, limit: 500, wait_ms: 25_000 }))).toBeUndefined();
    const unknown = await rpc(sock, "task.events", { task_id: "agt_000000000000000000000000", limit: 0 });
    expect(codeOf(unknown)).toBe("AGENT_TASK_NOT_FOUND");
  });

  test("a long poll returns early when an event is committed", async () => {
    const taskId = await submit({ prompt: "steer:" });
    const last = await untilEvent(taskId, "task.started");
    const polling = longPoll(taskId, last, LONG_WAIT_MS);
    // not synchronization: the poll answers the same whether the event comes before it waits or while
    // it does; the pause makes the second (the case under test) the likely one
    await Bun.sleep(200);
    await call(sock, "task.message.send", { task_id: taskId, message: "go" });
    const page = await polling;
    expect(page.elapsed).toBeLessThan(LONG_WAIT_MS / 2);
    expect(page.events[0]).toMatchObject({ event_type: "user.message", payload: { bytes: 2 } });
    await waitFor(taskId, isTerminalTask);
  });

  test("a long poll returns early when the task becomes terminal", async () => {
    const taskId = await submit({ prompt: "wait:" });
    const last = await untilEvent(taskId, "task.started");
    const polling = longPoll(taskId, last, LONG_WAIT_MS);
    await Bun.sleep(200); // as above: lets the poll be waiting when the end comes
    await call(sock, "task.cancel", { task_id: taskId });
    const page = await polling;
    expect(page.elapsed).toBeLessThan(LONG_WAIT_MS / 2);
    expect(types(page.events)).toEqual(["task.cancelled"]);
  });

  test("a long poll on a terminal task answers at once; on a quiet one it waits wait_ms and answers empty", async () => {
    const done = await submit({ prompt: "complete:x" });
    await waitFor(done, isTerminalTask);
    const end = (await allEvents(sock, done)).at(-1)!.event_id;
    const atOnce = await longPoll(done, end, LONG_WAIT_MS);
    expect(atOnce.elapsed).toBeLessThan(LONG_WAIT_MS / 4);
    expect(atOnce).toMatchObject({ events: [], next_after_event_id: end });

    const quiet = await submit({ prompt: "wait:" });
    const last = await untilEvent(quiet, "task.started");
    // a long poll beside it, on the same task, answers only when the task ends: the short one must
    // have ended on its own wait, before it
    let longAnswered = false;
    const long = longPoll(quiet, last, LONG_WAIT_MS).then((page) => {
      longAnswered = true;
      return page;
    });
    const waited = await longPoll(quiet, last, 400);
    expect(waited.events).toEqual([]);
    expect(waited.elapsed).toBeGreaterThanOrEqual(350);
    expect(longAnswered).toBe(false);
    await call(sock, "task.cancel", { task_id: quiet });
    expect(types((await long).events)).toEqual(["task.cancelled"]);
  });

  test("a long poll blocks only its own connection", async () => {
    const taskId = await submit({ prompt: "wait:" });
    const last = await untilEvent(taskId, "task.started");
    let pollAnswered = false;
    const polling = longPoll(taskId, last, LONG_WAIT_MS).then(() => (pollAnswered = true));
    expect((await call(sock, "task.get", { task_id: taskId }))["status"]).toBe("running");
    // answered while the poll still waits (it answers only when the task ends)
    expect(pollAnswered).toBe(false);
    await call(sock, "task.cancel", { task_id: taskId });
    await polling;
  });
});

describe("appending and limits", () => {
  test("events:10001 fails with AGENT_EVENT_LIMIT_REACHED; the first 10,000 events are kept in order; the dropped service event is logged", async () => {
    const taskId = await submit({ prompt: "events:10001" });
    const t = await waitFor(taskId, isTerminalTask, 60_000);
    expect(t).toMatchObject({ status: "failed", error_code: "AGENT_EVENT_LIMIT_REACHED", final_response: null });
    const events = await allEvents(sock, taskId);
    expect(events).toHaveLength(10_000);
    expect(events[0]!.event_type).toBe("task.started");
    const texts = events.slice(1).map((e) => e.payload["text"]);
    expect(texts[0]).toBe("event 1");
    expect(texts.at(-1)).toBe("event 9999");
    expect(texts.every((text, i) => text === `event ${i + 1}`)).toBe(true);
    // the task.failed service event did not fit: it was dropped and logged, the row is authoritative
    const dropped = await bridge().nextLine("service_event_dropped", { since: 0, where: (l) => l["task_id"] === taskId, timeoutMs: 5_000 });
    expect(dropped).toMatchObject({ level: "WARN", error_code: "AGENT_EVENT_LIMIT_REACHED" });
  }, 90_000);
});

describe("redaction before storage, sizes and hashes", () => {
  test("host paths in the final text become <workdir> forms; a sibling look-alike is outside", async () => {
    const ws = env.workspace;
    const taskId = await submit({ prompt: `complete:see ${ws}/src/a.ts, ${ws} and ${ws}2/x` });
    const t = await waitFor(taskId, isTerminalTask);
    const text = "see <workdir>/src/a.ts, <workdir> and <outside-workdir>";
    expect(t["final_response"]).toBe(text);
    expect(t["result"]).toMatchObject({ size_bytes: Buffer.byteLength(text), sha256: sha256Hex(text) });
  });

  test("HITL payloads are redacted: free text keeps a relative form, a lone absolute path becomes relative", async () => {
    const free = await submit({ prompt: `approval:cat ${env.workspace}/src/a.ts` });
    const asking = await waitFor(free, (t) => t["status"] === "waiting_for_approval");
    expect((asking["pending_request"] as { payload: Record<string, unknown> }).payload["command_display"]).toBe("cat <workdir>/src/a.ts");
    await call(sock, "task.cancel", { task_id: free });
    const lone = await submit({ prompt: `approval:${env.workspace}/src` });
    const loneAsking = await waitFor(lone, (t) => t["status"] === "waiting_for_approval");
    expect((loneAsking["pending_request"] as { payload: Record<string, unknown> }).payload["command_display"]).toBe("src");
    await call(sock, "task.cancel", { task_id: lone });
  });

  test("the inline limit applies to the redacted text: a result over 256 KiB raw but not once redacted is inline", async () => {
    const piece = `${env.workspace} `;
    const count = Math.floor(262_144 / Buffer.byteLength("<workdir> "));
    expect(Buffer.byteLength(piece) * count).toBeGreaterThan(262_144);
    const taskId = await submit({ prompt: `repeat:${count}:${piece}` });
    const t = await waitFor(taskId, isTerminalTask);
    expect(t["result"]).toMatchObject({ storage: "inline", size_bytes: count * Buffer.byteLength("<workdir> ") });
    expect(t["final_response"]).toBe("<workdir> ".repeat(count));
  });
});
