/**
 * Shutdown on SIGTERM (docs/task-model.md#shutdown): every provider group terminated and verified in parallel,
 * every active task interrupted with BRIDGE_SHUTDOWN, guards removed where the stop was verified,
 * leases released, exit 0 — and a second signal forcing exit 1 at once, failing closed.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { readGuard } from "../../src/shared/leases/guard-files.ts";
import { Store, type TaskRow } from "../../src/shared/store/index.ts";
import { allEvents, type BridgeEnv, call, startBridgeProcess, submitTask, waitForTask } from "../helpers/bridge.ts";
import { poll } from "../helpers/poll.ts";
import { aliasOf, cleanup, fakeProvidersIn, groupMembers, isAlive, mcpView, type Stray, startStray, taskRow, type WriteEnv, writeEnv } from "./support.ts";

/** The SIGTERM grace each stray holds a stop in (task-model.md#process-group-proof). */
const GRACE_MS = 5_000;
const setups: WriteEnv[] = [];

afterAll(async () => {
  await cleanup(setups.map((s) => s.env.stateDir));
  for (const s of setups) s.remove();
});

/** A running `spawn:` write task per slot, each with a stray that ignores SIGTERM and carries the task's mark. */
async function runningTasks(env: BridgeEnv, slots: number[]): Promise<{ taskId: string; pgid: number; stray: Stray; strayChild: number }[]> {
  const out = [];
  for (const slot of slots) {
    const r = await submitTask(env.socketPath, { workdir: aliasOf(slot), profile: "workspace-write", prompt: "spawn:120" });
    expect(r.ok).toBe(true);
    const taskId = String(r.result!["task_id"]);
    await waitForTask(env.socketPath, taskId, (t) => t["status"] === "running");
    const row = taskRow(env.stateDir, taskId)!;
    // a descendant that left the provider's group (setsid) keeps the mark in its environment
    const stray = startStray(row.provider_mark!);
    out.push({ taskId, pgid: row.provider_pgid!, stray, strayChild: await stray.child() });
  }
  return out;
}

function rows(stateDir: string, ids: string[]): TaskRow[] {
  const store = Store.open(stateDir);
  try {
    return ids.map((id) => store.getTask(id)!);
  } finally {
    store.close();
  }
}

describe("SIGTERM", () => {
  test("with four tasks running: all interrupted BRIDGE_SHUTDOWN, no guard and no provider process left, exit 0 within the bound", async () => {
    const setup = writeEnv(4);
    setups.push(setup);
    const { env } = setup;
    const bridge = await startBridgeProcess(env);
    const tasks = await runningTasks(env, [1, 2, 3, 4]);

    const began = Date.now();
    bridge.proc.kill("SIGTERM");
    expect(await bridge.proc.exited).toBe(0);
    const elapsed = Date.now() - began;
    // four strays each needed the 5 s SIGTERM grace: in parallel that is one grace, not four (three
    // quarters of four in a row is also the 15 s shutdown bound, which would have cut the stops short)
    expect(elapsed).toBeLessThan((4 * GRACE_MS * 3) / 4);

    for (const row of rows(
      env.stateDir,
      tasks.map((t) => t.taskId),
    )) {
      expect(row).toMatchObject({ status: "interrupted", error_code: "BRIDGE_SHUTDOWN" });
    }
    expect(readdirSync(join(env.lockDir, "active"))).toEqual([]);
    for (const t of tasks) {
      expect(groupMembers(t.pgid)).toEqual([]);
      expect(t.stray.proc.signalCode).toBe("SIGKILL");
      expect(isAlive(t.strayChild)).toBe(false);
    }
    expect(setup.workspaces.flatMap((w) => fakeProvidersIn(w))).toEqual([]);
    for (const slot of [1, 2, 3, 4]) expect(mcpView(env.lockDir, slot)).toBe("free");
    expect(existsSync(env.socketPath)).toBe(false);

    // the instance lock and the database were released: the next start finds nothing to reconcile
    const next = await startBridgeProcess(env);
    for (const t of tasks) {
      const events = await allEvents(env.socketPath, t.taskId);
      expect(events.at(-1)).toMatchObject({ event_type: "task.interrupted", payload: { error_code: "BRIDGE_SHUTDOWN" } });
      expect(events.some((e) => e.event_type === "task.reconciled")).toBe(false);
    }
    expect(await next.stop("SIGTERM")).toBe(0);
  }, 60_000);

  test("a second signal during shutdown exits 1 at once; the unverified guard stays for the next start", async () => {
    const setup = writeEnv(1);
    setups.push(setup);
    const { env } = setup;
    const bridge = await startBridgeProcess(env);
    const [task] = await runningTasks(env, [1]);

    bridge.proc.kill("SIGTERM");
    // shutdown has begun once the socket is gone; the stray now holds it in its 5 s SIGTERM grace
    await poll(() => !existsSync(env.socketPath));
    // not synchronization: a second signal exits 1 at any point of the stop; the pause puts it where
    // the stray is holding the stop in its grace, the case this test is about
    await Bun.sleep(200);
    const second = Date.now();
    bridge.proc.kill("SIGTERM");
    expect(await bridge.proc.exited).toBe(1);
    // at once: not after the stray's grace
    expect(Date.now() - second).toBeLessThan(GRACE_MS / 2);

    // fail closed: the stop was never verified, so the guard stays while the kernel frees the lease
    const guard = readGuard(env.lockDir, 1);
    expect(guard.kind === "valid" && guard.guard.task_id).toBe(task!.taskId);
    expect(mcpView(env.lockDir, 1)).toBe("recovery_required");
    expect(isAlive(task!.stray.pid)).toBe(true);

    // once the stray is gone, the next start proves it and clears the guard
    process.kill(-task!.stray.pid, "SIGKILL");
    await task!.stray.proc.exited;
    await poll(() => !isAlive(task!.strayChild));
    const next = await startBridgeProcess(env);
    expect(readGuard(env.lockDir, 1).kind).toBe("absent");
    // the forced exit came before the finally path could interrupt it: startup reconciliation did
    expect(await call(env.socketPath, "task.get", { task_id: task!.taskId })).toMatchObject({ status: "interrupted", error_code: "BRIDGE_RESTARTED" });
    expect(await next.stop("SIGTERM")).toBe(0);
  }, 60_000);
});
