/**
 * When reconciliation cannot clear a guard (docs/task-model.md#reconciliation row T5, `terminate_orphans = false`):
 * the slot stays fail-closed for writes, the periodic sweep (docs/reliability.md#lazy-write-submit-and-periodic-maintenance) clears the guard once the orphan
 * is gone, and the operator override (docs/reliability.md#operator-override, `serverfs recovery`) clears it explicitly.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { newMark, newTaskId } from "../../src/shared/ids.ts";
import { readGuard } from "../../src/shared/leases/guard-files.ts";
import { readProcStat, terminateProcessGroup } from "../../src/shared/process-group.ts";
import { Store } from "../../src/shared/store/index.ts";
import { allEvents, type BridgeEnv, type BridgeProcess, call, codeOf, DEBUG_LOG, rpc, startBridgeProcess, submitTask, waitForTask } from "../helpers/bridge.ts";
import { poll } from "../helpers/poll.ts";
import { runCli } from "../helpers/process.ts";
import { cleanup, crash, groupMembers, mcpView, taskRow, type WriteEnv, writeEnv } from "./support.ts";

let setup: WriteEnv;
let env: BridgeEnv;
let bridge: BridgeProcess;
/** Slot → the write task the crash left behind. */
const crashed = new Map<number, string>();

const recovery = (...args: string[]) => runCli(["recovery", ...args, "--config", env.configPath]);

beforeAll(async () => {
  setup = writeEnv(2, { recovery: { terminate_orphans: false }, config: DEBUG_LOG });
  env = setup.env;
  const first = await startBridgeProcess(env);
  for (const [slot, workdir] of [
    [1, "repo"],
    [2, "w2"],
  ] as const) {
    const r = await submitTask(env.socketPath, { workdir, profile: "workspace-write", prompt: "spawn:120" });
    const taskId = String(r.result!["task_id"]);
    await waitForTask(env.socketPath, taskId, (t) => t["status"] === "running");
    await poll(() => taskRow(env.stateDir, taskId)?.native_session_id != null, 20_000);
    crashed.set(slot, taskId);
  }
  for (const taskId of crashed.values()) await poll(() => groupMembers(taskRow(env.stateDir, taskId)!.provider_pgid!).length >= 2);
  await crash(first);
  bridge = await startBridgeProcess(env);
}, 60_000);

afterAll(async () => {
  await bridge?.stop("SIGKILL");
  await cleanup([env.stateDir]);
  setup.remove();
});

const pgidOf = (slot: number) => taskRow(env.stateDir, crashed.get(slot)!)!.provider_pgid!;

describe("row T5: terminate_orphans = false", () => {
  test("the orphan lives on, its guard stays, and the task is interrupted BRIDGE_RESTARTED with provider_active true", async () => {
    for (const slot of [1, 2]) {
      const taskId = crashed.get(slot)!;
      expect(groupMembers(pgidOf(slot)).length).toBeGreaterThan(0);
      const guard = readGuard(env.lockDir, slot);
      expect(guard.kind === "valid" && guard.guard.task_id).toBe(taskId);
      const task = await call(env.socketPath, "task.get", { task_id: taskId });
      expect(task).toMatchObject({ status: "interrupted", error_code: "BRIDGE_RESTARTED" });
      const events = await allEvents(env.socketPath, taskId);
      expect(events.find((e) => e.event_type === "runtime.reconcile_finished")?.payload).toEqual({
        runtime: "fake",
        status: "UNKNOWN",
        provider_active: true,
      });
      expect(events.find((e) => e.event_type === "task.reconciled")?.payload).toEqual({
        status: "UNKNOWN",
        provider_active: true,
        error_code: "BRIDGE_RESTARTED",
      });
    }
  });

  test("a write submit for the slot fails WORKDIR_RECOVERY_REQUIRED, and so would an MCP mutation", async () => {
    const r = await submitTask(env.socketPath, { profile: "workspace-write", prompt: "complete:blocked" });
    expect(codeOf(r)).toBe("WORKDIR_RECOVERY_REQUIRED");
    expect(mcpView(env.lockDir, 1)).toBe("recovery_required");
    // a review task takes no lease and is not blocked
    const review = await submitTask(env.socketPath, { profile: "review", prompt: "complete:read" });
    expect(review.ok).toBe(true);
  });

  test("the periodic sweep changes nothing while the orphan is alive", async () => {
    const before = await allEvents(env.socketPath, crashed.get(1)!);
    // a whole sweep ran after the snapshot, and it found no provider gone
    expect((await bridge.afterFullPass())["findings"]).toBe(0);
    expect(await allEvents(env.socketPath, crashed.get(1)!)).toEqual(before);
    expect(readGuard(env.lockDir, 1).kind).toBe("valid");
  });
});

describe("periodic reconciliation", () => {
  test("once the orphan is gone, the sweep removes the guard and records task.reconciled on the terminal task", async () => {
    const taskId = crashed.get(2)!;
    const row = taskRow(env.stateDir, taskId)!;
    // the orphan ends on its own (here: killed by someone else); the Bridge sends no signal itself
    expect((await terminateProcessGroup(row.provider_pgid, row.provider_start_time, row.provider_mark)).proven).toBe(true);
    await poll(() => readGuard(env.lockDir, 2).kind === "absent", 10_000);
    const events = await allEvents(env.socketPath, taskId);
    expect(events.at(-1)).toMatchObject({ event_type: "task.reconciled", payload: { status: "SESSION_RESUMABLE", provider_active: false } });
    expect(events.filter((e) => e.event_type.startsWith("runtime.reconcile_"))).toHaveLength(2); // only the startup pair
    expect(await call(env.socketPath, "task.get", { task_id: taskId })).toMatchObject({ status: "interrupted", error_code: "BRIDGE_RESTARTED" });
    const removed = bridge
      .stderr()
      .split("\n")
      .filter((l) => l.includes('"recovery.guard_removed"'))
      .map((l) => JSON.parse(l));
    expect(removed).toContainEqual(expect.objectContaining({ slot: 2, task_id: taskId, provider_active: false }));
  });

  test("an active task with no runner in this Bridge whose provider is gone is interrupted AGENT_PROVIDER_INACTIVE", async () => {
    // its provider: a process that has already exited, recorded as a provider group is
    const dead = Bun.spawn(["true"]);
    const deadStat = readProcStat(dead.pid)!;
    await dead.exited;
    // another writer of the state file left a task active that this Bridge never ran
    const store = Store.open(env.stateDir);
    const taskId = newTaskId();
    try {
      const now = new Date().toISOString();
      store.insertTask(
        {
          task_id: taskId,
          runtime: "fake",
          workdir_alias: "w2",
          workdir_slot: 2,
          relative_cwd: "",
          profile: "review",
          created_at: now,
          deadline_at: new Date(Date.now() + 3_600_000).toISOString(),
          continue_from_task_id: null,
          correlation_id: "orphaned-row",
          idempotency_key: null,
          submitter_sub: null,
          submitter_client_id: null,
          request_fingerprint: null,
          manifest_json: "{}",
          manifest_sha256: "0".repeat(64),
        },
        16,
      );
      store.transition(taskId, "starting");
      store.recordProvider(taskId, { pgid: dead.pid, startTime: deadStat.startTime, mark: newMark() });
    } finally {
      store.close();
    }
    const task = await waitForTask(env.socketPath, taskId, (t) => t["status"] === "interrupted", 10_000);
    expect(task["error_code"]).toBe("AGENT_PROVIDER_INACTIVE");
    const events = await allEvents(env.socketPath, taskId);
    expect(events.map((e) => [e.event_type, e.payload])).toEqual([
      ["task.reconciled", { status: "NOT_RECOVERABLE", provider_active: false, error_code: "AGENT_PROVIDER_INACTIVE" }],
      ["task.interrupted", { error_code: "AGENT_PROVIDER_INACTIVE" }],
    ]);
  });
});

describe("serverfs recovery (a Bridge is running: over the socket)", () => {
  test("recovery list --json shows the guard, its task's status and the latest verdict", async () => {
    const r = await recovery("list", "--json");
    expect(r.code).toBe(0);
    const { guards } = JSON.parse(r.stdout) as { guards: Record<string, unknown>[] };
    expect(guards).toEqual([
      {
        slot: 1,
        task_id: crashed.get(1),
        runtime: "fake",
        workdir_alias: "repo",
        created_at: taskRow(env.stateDir, crashed.get(1)!)!.created_at,
        task_status: "interrupted",
        last_verdict: { status: "UNKNOWN", provider_active: true, error_code: "BRIDGE_RESTARTED" },
      },
    ]);
  });

  test("recovery list prints a table for a person", async () => {
    const r = await recovery("list");
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^SLOT\s+TASK\s+RUNTIME\s+WORKDIR\s+CREATED\s+STATUS\s+VERDICT$/);
    expect(lines[1]).toContain(crashed.get(1)!);
    expect(lines[1]).toContain("UNKNOWN, provider active");
  });

  test("recovery.clear over the socket insists on confirm: true and a slot in 1..16", async () => {
    expect(codeOf(await rpc(env.socketPath, "recovery.clear", { slot: 1, confirm: false }))).toBe("INVALID_REQUEST");
    expect(codeOf(await rpc(env.socketPath, "recovery.clear", { slot: 17, confirm: true }))).toBe("INVALID_WORKDIR_SLOT");
    expect(codeOf(await rpc(env.socketPath, "recovery.clear", { slot: 1 }))).toBe("INVALID_REQUEST");
    expect(codeOf(await rpc(env.socketPath, "recovery.list", { slot: 1 }))).toBe("INVALID_REQUEST");
    expect(readGuard(env.lockDir, 1).kind).toBe("valid");
  });

  test("recovery clear without --confirm is a usage error (exit 2) and changes nothing", async () => {
    const r = await recovery("clear", "--slot", "1");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("usage error");
    expect(readGuard(env.lockDir, 1).kind).toBe("valid");
  });

  test("a slot outside 1..16 is INVALID_WORKDIR_SLOT (exit 2)", async () => {
    for (const slot of ["0", "17"]) {
      const r = await recovery("clear", "--slot", slot, "--confirm");
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("INVALID_WORKDIR_SLOT");
    }
  });

  test("WORKDIR_BUSY (exit 1) while a live write task holds the slot's lease", async () => {
    const r = await submitTask(env.socketPath, { workdir: "w2", profile: "workspace-write", prompt: "wait:" });
    expect(r.ok).toBe(true);
    const taskId = String(r.result!["task_id"]);
    await waitForTask(env.socketPath, taskId, (t) => t["status"] === "running");
    const clear = await recovery("clear", "--slot", "2", "--confirm");
    expect(clear.code).toBe(1);
    expect(clear.stderr).toContain("WORKDIR_BUSY");
    expect(readGuard(env.lockDir, 2).kind).toBe("valid");
    await call(env.socketPath, "task.cancel", { task_id: taskId });
    await poll(() => readGuard(env.lockDir, 2).kind === "absent");
  });

  test("recovery clear --slot N --confirm removes the guard, records OPERATOR_CLEARED and audits it; the task status is unchanged", async () => {
    const taskId = crashed.get(1)!;
    const r = await recovery("clear", "--slot", "1", "--confirm");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`slot 1: guard of task ${taskId} cleared`);
    expect(readGuard(env.lockDir, 1).kind).toBe("absent");
    const events = await allEvents(env.socketPath, taskId);
    expect(events.at(-1)).toMatchObject({ event_type: "task.reconciled", payload: { status: "OPERATOR_CLEARED", provider_active: null } });
    expect(await call(env.socketPath, "task.get", { task_id: taskId })).toMatchObject({ status: "interrupted", error_code: "BRIDGE_RESTARTED" });
    const line = await bridge.nextLine("recovery.operator_cleared", { since: 0 });
    expect(line).toMatchObject({ schema_version: 1, slot: 1, task_id: taskId, correlation_id: null, status: "OPERATOR_CLEARED", provider_active: null });
  });

  test("clearing again says there is no guard (exit 0), and the slot takes a write task again", async () => {
    const r = await recovery("clear", "--slot", "1", "--confirm", "--json");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ slot: 1, cleared: false, task_id: null });
    const submit = await submitTask(env.socketPath, { profile: "workspace-write", prompt: "complete:free again" });
    expect(submit.ok).toBe(true);
    await waitForTask(env.socketPath, String(submit.result!["task_id"]), (t) => t["status"] === "succeeded");
  });
});
