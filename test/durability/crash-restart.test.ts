/**
 * Crash and restart (docs/task-model.md#the-finally-path "Crash case", docs/task-model.md#lease-files-and-the-active-slot-guard, docs/reliability.md#startup-before-the-socket-opens): a real `serverfs bridge` is
 * killed with SIGKILL during a workspace-write `spawn:` task, so no finally path runs and the
 * provider's grandchild outlives it; the next start must decide from evidence alone.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readGuard } from "../../src/shared/leases/guard-files.ts";
import { allEvents, type BridgeEnv, type BridgeProcess, bridgeEnv, call, DEBUG_LOG, startBridgeProcess, submitTask, waitForTask } from "../helpers/bridge.ts";
import { errorCode, type McpSession, startStdio } from "../helpers/mcp-client.ts";
import { poll } from "../helpers/poll.ts";
import { bridgesOfFile, crash, fakeProvidersIn, groupMembers, mcpView, taskRow, watchProviders } from "./support.ts";

const { envs, bridges } = bridgesOfFile("SIGKILL");

async function start(env: BridgeEnv): Promise<BridgeProcess> {
  const b = await startBridgeProcess(env);
  bridges.push(b);
  return b;
}

/** Submits a task and waits until its provider runs (and, unless told otherwise, its native session is recorded). */
async function running(env: BridgeEnv, params: Record<string, unknown>, session = true): Promise<string> {
  const r = await submitTask(env.socketPath, params);
  if (!r.ok) throw new Error(`submit failed: ${r.error?.code}`);
  const taskId = String(r.result!["task_id"]);
  await waitForTask(env.socketPath, taskId, (t) => t["status"] === "running");
  if (session) await poll(() => taskRow(env.stateDir, taskId)?.native_session_id != null, 20_000);
  return taskId;
}

const auditLines = (b: BridgeProcess) =>
  b
    .stderr()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe("kill -9 during a workspace-write task, then restart (terminate_orphans = true)", () => {
  let env: BridgeEnv;
  let writeTask: string;
  let reviewTask: string;
  let pgid: number;
  let startedAt: string | null;
  let mcp: McpSession;

  beforeAll(async () => {
    env = bridgeEnv({ config: DEBUG_LOG });
    envs.push(env);
    const first = await start(env);
    writeTask = await running(env, { profile: "workspace-write", prompt: "spawn:120" });
    reviewTask = await running(env, { profile: "review", prompt: "spawn:120" });
    const row = taskRow(env.stateDir, writeTask)!;
    pgid = row.provider_pgid!;
    startedAt = row.started_at;
    // the grandchild `sleep` is in the provider's group once the provider has started it
    await poll(() => groupMembers(pgid).length >= 2);
    await crash(first);
    mcp = await startStdio(env.configPath);
  }, 60_000);

  afterAll(async () => {
    await mcp?.close();
  });

  test("the guard outlives the crash, the kernel frees the lease, and an MCP-style check reports recovery required", async () => {
    const guard = readGuard(env.lockDir, 1);
    expect(guard.kind).toBe("valid");
    if (guard.kind !== "valid") return;
    expect(guard.guard.task_id).toBe(writeTask);
    expect(guard.guard.provider_pgid).toBe(pgid);
    expect(guard.guard.provider_mark).toMatch(/^[0-9a-f]{32}$/);
    // NN.lock opened read-only, flock(LOCK_EX|LOCK_NB) succeeds, active/NN present
    expect(mcpView(env.lockDir, 1)).toBe("recovery_required");
    // the provider itself went with its pipes; its grandchild outlived the Bridge: the orphan group is alive
    await poll(() => fakeProvidersIn(env.workspace).length === 0);
    expect(groupMembers(pgid).length).toBeGreaterThan(0);
  });

  test("a real MCP mutation of the slot fails closed with WORKDIR_RECOVERY_REQUIRED", async () => {
    const r = await mcp.call("create_text_file", { workdir: "repo", path: "after-crash.txt", content: "x" });
    expect(errorCode(r)).toBe("WORKDIR_RECOVERY_REQUIRED");
  });

  describe("after the restart", () => {
    let restarted: BridgeProcess;
    let seenProviders: number[];

    // the restart is this block's fixture, so each test below stands on its own given the crash
    beforeAll(async () => {
      const watch = watchProviders(env.workspace);
      restarted = await start(env);
      // a whole periodic sweep after the restart: it must re-run nothing either
      await restarted.afterFullPass();
      seenProviders = await watch.stop();
    }, 60_000);

    test("restart terminates the orphan group, verifies it gone and clears the guard", async () => {
      expect(groupMembers(pgid)).toEqual([]);
      expect(readGuard(env.lockDir, 1).kind).toBe("absent");
      expect(mcpView(env.lockDir, 1)).toBe("free");
      const audit = auditLines(restarted);
      const terminated = audit.find((a) => a["event"] === "recovery.orphan_terminated" && a["task_id"] === writeTask);
      expect(terminated).toMatchObject({ schema_version: 1, slot: 1, status: "SESSION_RESUMABLE", provider_active: false });
      const removed = audit.find((a) => a["event"] === "recovery.guard_removed");
      expect(removed).toMatchObject({ schema_version: 1, slot: 1, task_id: writeTask, correlation_id: null, provider_active: false });
      expect(Object.keys(removed!).sort()).toEqual(
        ["at", "correlation_id", "event", "level", "provider_active", "schema_version", "slot", "status", "task_id", "timestamp"].sort(),
      );
    });

    test("the task is interrupted with BRIDGE_RESTARTED, with the reconciliation events in order", async () => {
      const task = await call(env.socketPath, "task.get", { task_id: writeTask });
      expect(task).toMatchObject({ status: "interrupted", error_code: "BRIDGE_RESTARTED" });
      const events = await allEvents(env.socketPath, writeTask);
      expect(events.map((e) => e.event_type)).toEqual([
        "task.started",
        "runtime.reconcile_started",
        "runtime.reconcile_finished",
        "task.reconciled",
        "task.interrupted",
      ]);
      expect(events[1]!.payload).toEqual({ runtime: "fake" });
      expect(events[2]!.payload).toEqual({ runtime: "fake", status: "SESSION_RESUMABLE", provider_active: false });
      expect(events[3]!.payload).toEqual({ status: "SESSION_RESUMABLE", provider_active: false, error_code: "BRIDGE_RESTARTED" });
      expect(events[4]!.payload).toEqual({ error_code: "BRIDGE_RESTARTED" });
    });

    test("the provider is never started again", async () => {
      expect(seenProviders).toEqual([]);
      const events = await allEvents(env.socketPath, writeTask);
      expect(events.filter((e) => e.event_type === "task.started")).toHaveLength(1);
      expect(taskRow(env.stateDir, writeTask)!.started_at).toBe(startedAt);
    });

    test("a review task is reconciled the same way, with no guard to clear", async () => {
      const task = await call(env.socketPath, "task.get", { task_id: reviewTask });
      expect(task).toMatchObject({ status: "interrupted", error_code: "BRIDGE_RESTARTED" });
      const row = taskRow(env.stateDir, reviewTask)!;
      expect(groupMembers(row.provider_pgid!)).toEqual([]);
      const reconciled = (await allEvents(env.socketPath, reviewTask)).find((e) => e.event_type === "task.reconciled");
      expect(reconciled?.payload).toEqual({ status: "SESSION_RESUMABLE", provider_active: false, error_code: "BRIDGE_RESTARTED" });
    });

    test("the slot takes writes again: the MCP mutation proceeds and a write task runs", async () => {
      const r = await mcp.call("create_text_file", { workdir: "repo", path: "after-restart.txt", content: "x" });
      expect(errorCode(r)).toBeNull();
      const submit = await submitTask(env.socketPath, { profile: "workspace-write", prompt: "complete:again" });
      expect(submit.ok).toBe(true);
      const done = await waitForTask(env.socketPath, String(submit.result!["task_id"]), (t) => t["status"] === "succeeded");
      expect(done["final_response"]).toBe("again");
    });
  });
});

describe("a crash whose task deadline passed before the restart", () => {
  test("the task is interrupted with AGENT_TASK_TIMED_OUT, its orphan terminated and its guard cleared", async () => {
    const env = bridgeEnv({ lifecycle: { task_timeout_seconds: 5 } });
    envs.push(env);
    const first = await start(env);
    // no wait for the session: the crash must come well before the deadline
    const taskId = await running(env, { profile: "workspace-write", prompt: "spawn:120" }, false);
    await crash(first);
    const row = taskRow(env.stateDir, taskId)!;
    // the premise: the crash came before the deadline, so no deadline timer ended the task
    expect(row.status).toBe("running");
    const pgid = row.provider_pgid!;
    await poll(() => Date.now() > Date.parse(row.deadline_at!) + 100, 10_000);
    expect(readGuard(env.lockDir, 1).kind).toBe("valid");

    await start(env);
    const task = await call(env.socketPath, "task.get", { task_id: taskId });
    expect(task).toMatchObject({ status: "interrupted", error_code: "AGENT_TASK_TIMED_OUT" });
    const events = await allEvents(env.socketPath, taskId);
    expect(events.find((e) => e.event_type === "task.reconciled")?.payload).toEqual({
      status: row.native_session_id ? "SESSION_RESUMABLE" : "NOT_RECOVERABLE",
      provider_active: false,
      error_code: "AGENT_TASK_TIMED_OUT",
    });
    expect(events.at(-1)).toMatchObject({ event_type: "task.interrupted", payload: { error_code: "AGENT_TASK_TIMED_OUT" } });
    expect(groupMembers(pgid)).toEqual([]);
    expect(readGuard(env.lockDir, 1).kind).toBe("absent");
  }, 60_000);
});
