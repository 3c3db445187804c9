/**
 * Guards nobody is running (docs/task-model.md#reconciliation rows G1–G3), the process-group proof against a provider
 * that ignores SIGTERM (docs/task-model.md#process-group-proof), lazy reconciliation at write submit (docs/reliability.md#lazy-write-submit-and-periodic-maintenance) and the operator
 * override with no Bridge running (docs/reliability.md#operator-override). Guards are laid out as a crashed Bridge leaves them, on
 * real lock directories; the maintenance sweep is held off (one-hour interval) so that only startup
 * and lazy reconciliation act.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { newMark, newTaskId } from "../../src/shared/ids.ts";
import { activeDir, guardPath, readGuard } from "../../src/shared/leases/guard-files.ts";
import type { TaskRow } from "../../src/shared/store/index.ts";
import { allEvents, type BridgeEnv, type BridgeProcess, call, codeOf, rpc, startBridgeProcess, submitTask, waitForTask } from "../helpers/bridge.ts";
import { poll } from "../helpers/poll.ts";
import { runCli } from "../helpers/process.ts";
import {
  aliasOf,
  cleanup,
  groupMembers,
  holdLock,
  isAlive,
  mcpView,
  providerFields,
  type Stray,
  startStray,
  taskRow,
  type WriteEnv,
  writeEnv,
  writeGuard,
} from "./support.ts";

let setup: WriteEnv;
let env: BridgeEnv;
let bridge: BridgeProcess;
/** Terminal write tasks of a first, cleanly stopped Bridge, by slot; their providers are long gone. */
const finished = new Map<number, TaskRow>();
const orphanTaskId = newTaskId();
let orphan: Stray;
let orphanChild: number;

const leftoverTemp = () => join(activeDir(env.lockDir), ".02.0123456789abcdef.tmp");
const recovery = (...args: string[]) => runCli(["recovery", ...args, "--config", env.configPath]);
const audit = () =>
  bridge
    .stderr()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

beforeAll(async () => {
  setup = writeEnv(4, { lifecycle: { maintenance_interval_seconds: 3600 } });
  env = setup.env;
  const first = await startBridgeProcess(env);
  for (const slot of [1, 4]) {
    const r = await submitTask(env.socketPath, { workdir: aliasOf(slot), profile: "workspace-write", prompt: "complete:done" });
    const taskId = String(r.result!["task_id"]);
    await waitForTask(env.socketPath, taskId, (t) => t["status"] === "succeeded");
    await poll(() => readGuard(env.lockDir, slot).kind === "absent");
    finished.set(slot, taskRow(env.stateDir, taskId)!);
  }
  expect(await first.stop("SIGTERM")).toBe(0);

  // G1: the guard of a terminal task (as if its finally path had not got to remove it)
  writeGuard(env.lockDir, 1, providerFields(finished.get(1)!));
  // G2: a guard whose task row is gone; its own fields name a live group that ignores SIGTERM
  orphan = startStray();
  orphanChild = await orphan.child();
  writeGuard(env.lockDir, 2, { task_id: orphanTaskId, provider_pgid: orphan.pid, provider_start_time: orphan.startTime, provider_mark: orphan.mark });
  // G3: an invalid guard
  writeFileSync(guardPath(env.lockDir, 3), "not a guard\n", { mode: 0o600 });
  // a crash between writing a guard's temporary file and linking it
  writeFileSync(leftoverTemp(), "{}\n", { mode: 0o600 });
  const anHourAgo = new Date(Date.now() - 3_600_000);
  utimesSync(leftoverTemp(), anHourAgo, anHourAgo);
}, 60_000);

afterAll(async () => {
  if (bridge && bridge.proc.exitCode === null) await bridge.stop("SIGKILL");
  await cleanup([env.stateDir]);
  setup.remove();
});

describe("recovery list with no Bridge running (a read-only look)", () => {
  test("every guard is listed, invalid ones with task_id null, with the task's status where a row exists", async () => {
    const r = await recovery("list", "--json");
    expect(r.code).toBe(0);
    const { guards } = JSON.parse(r.stdout) as { guards: Record<string, unknown>[] };
    expect(guards.map((g) => [g["slot"], g["task_id"], g["task_status"], g["last_verdict"]])).toEqual([
      [1, finished.get(1)!.task_id, "succeeded", null],
      [2, orphanTaskId, null, null],
      [3, null, null, null],
    ]);
    expect(readGuard(env.lockDir, 1).kind).toBe("valid");
  });
});

describe("startup reconciliation of guards nobody runs", () => {
  let startedAt: number;
  let startupMs: number;

  beforeAll(async () => {
    startedAt = Date.now();
    bridge = await startBridgeProcess(env);
    startupMs = Date.now() - startedAt;
  }, 30_000);

  test("G1: the guard of a terminal task whose group is gone is removed; the task gets task.reconciled and keeps its status", async () => {
    const row = finished.get(1)!;
    expect(readGuard(env.lockDir, 1).kind).toBe("absent");
    const events = await allEvents(env.socketPath, row.task_id);
    expect(events.at(-1)).toMatchObject({ event_type: "task.reconciled", payload: { status: "SESSION_RESUMABLE", provider_active: false } });
    expect(events.filter((e) => e.event_type.startsWith("runtime.reconcile_"))).toEqual([]);
    expect(await call(env.socketPath, "task.get", { task_id: row.task_id })).toMatchObject({ status: "succeeded", error_code: null });
  });

  test("G2: a group that ignores SIGTERM is killed with SIGKILL after the grace period, its grandchild too", async () => {
    expect(await orphan.proc.exited).toBe(137); // 128 + SIGKILL
    expect(orphan.proc.signalCode).toBe("SIGKILL");
    expect(isAlive(orphanChild)).toBe(false);
    expect(groupMembers(orphan.pid)).toEqual([]);
    // SIGTERM first, 5 s of grace, then SIGKILL: all before the socket opened
    expect(startupMs).toBeGreaterThanOrEqual(5000);
  });

  test("G2: decided from the guard's own fields, the guard is removed with audit lines only (no task row)", async () => {
    expect(readGuard(env.lockDir, 2).kind).toBe("absent");
    const lines = audit().filter((a) => a["task_id"] === orphanTaskId);
    expect(lines.map((a) => a["event"])).toEqual(["recovery.orphan_terminated", "recovery.guard_removed"]);
    expect(lines[1]).toMatchObject({ schema_version: 1, slot: 2, status: "NOT_RECOVERABLE", provider_active: false });
    expect(codeOf(await rpc(env.socketPath, "task.get", { task_id: orphanTaskId }))).toBe("AGENT_TASK_NOT_FOUND");
  });

  test("a temporary guard file older than the instance lock is a crash's leftover and is removed", () => {
    expect(existsSync(leftoverTemp())).toBe(false);
  });

  test("G3: an invalid guard is kept; a write submit and an MCP mutation of its slot fail closed", async () => {
    expect(readGuard(env.lockDir, 3).kind).toBe("invalid");
    expect(audit()).toContainEqual(expect.objectContaining({ event: "recovery.guard_kept", slot: 3, task_id: null, status: "UNKNOWN", provider_active: null }));
    expect(codeOf(await submitTask(env.socketPath, { workdir: aliasOf(3), profile: "workspace-write", prompt: "complete:x" }))).toBe(
      "WORKDIR_RECOVERY_REQUIRED",
    );
    expect(mcpView(env.lockDir, 3)).toBe("recovery_required");
  });
});

describe("lazy reconciliation at write submit", () => {
  test("a guard whose provider is alive is kept, no signal is sent, and the submit fails WORKDIR_RECOVERY_REQUIRED", async () => {
    const live = startStray();
    await live.child();
    // the row is gone, so the guard's own fields decide: they name the live group
    writeGuard(env.lockDir, 4, { provider_pgid: live.pid, provider_start_time: live.startTime, provider_mark: live.mark });
    expect(codeOf(await submitTask(env.socketPath, { workdir: aliasOf(4), profile: "workspace-write", prompt: "complete:x" }))).toBe(
      "WORKDIR_RECOVERY_REQUIRED",
    );
    expect(isAlive(live.pid)).toBe(true);
    expect(live.proc.exitCode).toBeNull();
    expect(readGuard(env.lockDir, 4).kind).toBe("valid");
    live.proc.kill("SIGKILL");
    await live.proc.exited;
  });

  test("a guard whose provider is proven gone is cleared at submit, recorded on its task, and the new task runs", async () => {
    const old = finished.get(4)!;
    writeGuard(env.lockDir, 4, providerFields(old)); // only the recorded group and mark, both long gone
    const before = (await allEvents(env.socketPath, old.task_id)).length;
    const r = await submitTask(env.socketPath, { workdir: aliasOf(4), profile: "workspace-write", prompt: "complete:after lazy" });
    expect(r.ok).toBe(true);
    const events = await allEvents(env.socketPath, old.task_id);
    expect(events.slice(before).map((e) => [e.event_type, e.payload])).toEqual([["task.reconciled", { status: "SESSION_RESUMABLE", provider_active: false }]]);
    const done = await waitForTask(env.socketPath, String(r.result!["task_id"]), (t) => t["status"] === "succeeded");
    expect(done["final_response"]).toBe("after lazy");
    await poll(() => readGuard(env.lockDir, 4).kind === "absent");
  });
});

describe("recovery clear with no Bridge running (under the instance lock)", () => {
  beforeAll(async () => {
    expect(await bridge.stop("SIGTERM")).toBe(0);
  });

  test("WORKDIR_BUSY (exit 1) while another writer holds the slot's lock; the guard stays", async () => {
    const release = holdLock(env.lockDir, 3);
    try {
      const r = await recovery("clear", "--slot", "3", "--confirm");
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("WORKDIR_BUSY");
    } finally {
      release();
    }
    expect(readGuard(env.lockDir, 3).kind).toBe("invalid");
  });

  test("an invalid guard is removed, with the audit line on the command's stderr", async () => {
    const r = await recovery("clear", "--slot", "3", "--confirm");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("slot 3: invalid guard cleared");
    expect(readGuard(env.lockDir, 3).kind).toBe("absent");
    const line = r.stderr.split("\n").find((l) => l.includes('"recovery.operator_cleared"'));
    expect(JSON.parse(line!)).toMatchObject({ schema_version: 1, slot: 3, task_id: null, status: "OPERATOR_CLEARED", provider_active: null });
  });

  test("the guard of an existing task is removed and OPERATOR_CLEARED is appended to the task", async () => {
    const row = finished.get(1)!;
    writeGuard(env.lockDir, 1, { ...providerFields(row), provider_mark: newMark() });
    const r = await recovery("clear", "--slot", "1", "--confirm", "--json");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ slot: 1, cleared: true, task_id: row.task_id });
    bridge = await startBridgeProcess(env);
    const events = await allEvents(env.socketPath, row.task_id);
    expect(events.at(-1)).toMatchObject({ event_type: "task.reconciled", payload: { status: "OPERATOR_CLEARED", provider_active: null } });
    expect(await call(env.socketPath, "task.get", { task_id: row.task_id })).toMatchObject({ status: "succeeded" });
  });
});
