/**
 * Startup is not held hostage by orphans (docs/reliability.md "The Bridge under faults"). Six tasks
 * each leave an orphan that ignores SIGTERM (a marked stray that left the provider's group and traps
 * TERM) when the Bridge is killed with SIGKILL. At the next start every orphan is terminated — SIGTERM,
 * the 5 s grace, SIGKILL — all at once, so the socket opens within about one termination bound, not
 * six; the records are still written task by task in created_at order.
 */
import { afterAll, describe, expect, test } from "bun:test";
import type { TaskRow } from "../../src/shared/store/index.ts";
import { allEvents, type BridgeProcess, call, markedProcesses, recordedMark, startBridgeProcess, submitAccepted, waitForTask } from "../helpers/bridge.ts";
import { cleanup, crash, isAlive, mcpView, startStray, taskRow, writeEnv } from "./support.ts";

const ORPHANS = 6;
/** Each orphan's SIGTERM grace (task-model.md#process-group-proof). */
const GRACE_MS = 5_000;
/**
 * Less than half of the graces in a row (six take 31 s): the decisions ran at once. In parallel the
 * socket opens after about one grace (5.2–5.3 s here), so a loaded machine has room.
 */
const OPEN_WITHIN_MS = (ORPHANS * GRACE_MS) / 2;

const setup = writeEnv(1, { lifecycle: { maintenance_interval_seconds: 1, max_active_tasks: 16 } });
const { env } = setup;
const bridges: BridgeProcess[] = [];

afterAll(async () => {
  for (const b of bridges) if (b.proc.exitCode === null) await b.stop();
  await cleanup([env.stateDir]);
  setup.remove();
});

describe("startup reconciliation with several SIGTERM-ignoring orphans", () => {
  test("terminates them in parallel: the socket opens within one bound, records in created_at order", async () => {
    const first = await startBridgeProcess(env);
    bridges.push(first);
    const ids: string[] = [];
    for (let i = 0; i < ORPHANS; i++) {
      // one write task (guard) and review tasks, created one after the other
      const profile = i === 0 ? "workspace-write" : "review";
      const task_id = await submitAccepted(env.socketPath, { profile, prompt: "wait:" });
      ids.push(task_id);
    }
    const strays = [];
    const rows: TaskRow[] = [];
    for (const id of ids) {
      await waitForTask(env.socketPath, id, (t) => t["status"] === "running");
      const row = taskRow(env.stateDir, id)!;
      rows.push(row);
      strays.push(startStray(row.provider_mark!));
    }
    // created_at has millisecond grain: two submits in one millisecond tie, and the store breaks a tie by
    // task_id (SQLite's binary order, which `<` on these ASCII strings matches)
    const key = (r: TaskRow) => [r.created_at, r.task_id].join("\u0000");
    const createdOrder = rows.toSorted((a, b) => (key(a) < key(b) ? -1 : 1)).map((r) => r.task_id);
    const children = await Promise.all(strays.map((s) => s.child()));
    await crash(first);
    expect(strays.every((s) => isAlive(s.pid))).toBe(true);
    expect(mcpView(env.lockDir, 1)).toBe("recovery_required");

    const start = Date.now();
    const second = await startBridgeProcess(env);
    bridges.push(second);
    const opened = Date.now() - start;
    console.log(JSON.stringify({ orphans: ORPHANS, socket_opened_ms: opened }));
    expect(opened).toBeLessThan(OPEN_WITHIN_MS);

    // every orphan is gone, every task interrupted, the guard cleared
    expect(strays.some((s) => isAlive(s.pid)) || children.some(isAlive)).toBe(false);
    expect(mcpView(env.lockDir, 1)).toBe("free");
    const interruptedAt: number[] = [];
    for (const id of createdOrder) {
      const t = await call(env.socketPath, "task.get", { task_id: id });
      expect([t["status"], t["error_code"]]).toEqual(["interrupted", "BRIDGE_RESTARTED"]);
      const events = (await allEvents(env.socketPath, id)).filter(
        (e) => e.event_type.startsWith("runtime.reconcile") || e.event_type.startsWith("task.re") || e.event_type === "task.interrupted",
      );
      expect(events.map((e) => e.event_type)).toEqual(["runtime.reconcile_started", "runtime.reconcile_finished", "task.reconciled", "task.interrupted"]);
      expect(events[1]!.payload).toMatchObject({ provider_active: false });
      interruptedAt.push(events[3]!.event_id);
    }
    // tasks are reconciled in created_at order: their interrupts were written in that order
    expect(interruptedAt).toEqual([...interruptedAt].sort((a, b) => a - b));
    // the audit lines too: one orphan_terminated per task, in the same order
    const terminated = second
      .stderr()
      .split("\n")
      .filter((l) => l.includes('"recovery.orphan_terminated"'))
      .map((l) => JSON.parse(l).task_id as string);
    expect(terminated).toEqual(createdOrder);
  }, 120_000);
});

/**
 * A review task has no guard, so a Bridge killed while a review run's finally path was still
 * terminating what the provider left in its group (a child that ignores SIGTERM) used to leave that
 * child running for good: the row is terminal and no guard names it. Startup now finds it by the mark
 * it inherited and terminates it; the task keeps its status and is told so with `task.reconciled`.
 */
describe("startup reconciliation of a terminal review task's orphan", () => {
  test("the SIGTERM-ignoring child a killed finally path left behind is terminated; the task keeps its status", async () => {
    for (const b of bridges) if (b.proc.exitCode === null) await b.stop();
    const first = await startBridgeProcess(env);
    bridges.push(first);
    const task_id = await submitAccepted(env.socketPath, { profile: "review", prompt: "linger:120:done" });
    // the run ended and its finally path is inside the 5 s grace for the child that ignores SIGTERM
    await waitForTask(env.socketPath, task_id, (t) => t["status"] === "succeeded");
    const mark = recordedMark(env.stateDir, task_id);
    expect(markedProcesses(mark).length).toBeGreaterThan(0);
    await crash(first);
    const orphans = markedProcesses(mark).map(Number);
    expect(orphans.length).toBeGreaterThan(0);

    const second = await startBridgeProcess(env);
    bridges.push(second);
    expect(orphans.filter(isAlive)).toEqual([]);
    const t = await call(env.socketPath, "task.get", { task_id });
    expect(t["status"]).toBe("succeeded");
    const reconciled = (await allEvents(env.socketPath, task_id)).filter((e) => e.event_type === "task.reconciled");
    expect(reconciled.map((e) => e.payload)).toEqual([{ status: "SESSION_RESUMABLE", provider_active: false }]);
    const audit = second
      .stderr()
      .split("\n")
      .filter((l) => l.includes('"recovery.orphan_terminated"'))
      .map((l) => JSON.parse(l));
    expect(audit).toMatchObject([{ task_id, slot: null, provider_active: false }]);
    // nothing of it is run again, and the next start finds nothing left
    await second.stop();
    const third = await startBridgeProcess(env);
    bridges.push(third);
    expect(third.stderr()).not.toContain('"recovery.orphan_terminated"');
  }, 60_000);
});
