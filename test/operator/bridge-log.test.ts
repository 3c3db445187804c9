/**
 * The Bridge's operational log (docs/deployment.md "Logs"): at `info`, one JSON object per line for
 * startup (version, pid and the operator's own files), every task's submit / start / end (ids, runtime,
 * profile, status, error code, duration), approvals asked and answered (ids and decision, never
 * content), signals and shutdown, and each maintenance pass (what it did, or which step failed). A real
 * Bridge process over its socket.
 */
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { seedFinishedTasks } from "../../scripts/bench/lib/bridge-seed.ts";
import { bridgeEnv, call, DEBUG_LOG, isTerminalTask, startBridgeProcess, submitAccepted, waitForTask } from "../helpers/bridge.ts";
import { createLegacyDb } from "../helpers/legacy-db.ts";

const CANARY = "canary-prompt-text-7f3a";

type Line = Record<string, unknown> & { event: string; level: string };
const parse = (stderr: string): Line[] =>
  stderr
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Line);

async function session() {
  const env = bridgeEnv({ config: { server: { log_level: "info" } } });
  const bridge = await startBridgeProcess(env);
  try {
    const submit = (prompt: string) => submitAccepted(env.socketPath, { profile: "review", prompt });
    const done = await submit(`complete:${CANARY}`);
    await waitForTask(env.socketPath, done, isTerminalTask);
    const asked = await submit(`approval:echo ${CANARY}`);
    const waiting = await waitForTask(env.socketPath, asked, (t) => t["status"] === "waiting_for_approval");
    const requestId = (waiting["pending_request"] as { request_id: string }).request_id;
    await call(env.socketPath, "task.approval.respond", { task_id: asked, request_id: requestId, decision: "approve_once" });
    await waitForTask(env.socketPath, asked, isTerminalTask);
    const stopped = await submit("wait:");
    await waitForTask(env.socketPath, stopped, (t) => t["status"] === "running");
    await call(env.socketPath, "task.cancel", { task_id: stopped });
    await waitForTask(env.socketPath, stopped, isTerminalTask);
    expect(await bridge.stop("SIGTERM")).toBe(0);
    return { env, lines: parse(bridge.stderr()), raw: bridge.stderr(), startup: bridge.startupLine(), ids: { done, asked, stopped, requestId } };
  } finally {
    env.dir.remove();
  }
}

describe("the Bridge's log at info", () => {
  test("startup, each task's life, approvals, the signal and the shutdown; never content", async () => {
    const { env, lines, raw, startup, ids } = await session();
    expect(lines.find((l) => l.event === "schema_migrated")).toMatchObject({ from: "new", to: "v0.7" });
    expect(startup).toMatchObject({ level: "INFO", pid: expect.any(Number), config_file: env.configPath, socket: env.socketPath, state_dir: env.stateDir });
    const of = (event: string, taskId: string) => lines.filter((l) => l.event === event && l["task_id"] === taskId);
    for (const id of [ids.done, ids.asked, ids.stopped]) {
      expect(of("task_submitted", id)).toHaveLength(1);
      expect(of("task_started", id)).toHaveLength(1);
      expect(of("task_ended", id)).toHaveLength(1);
      expect(of("task_submitted", id)[0]).toMatchObject({ runtime: "fake", profile: "review", workdir: "repo", status: "queued" });
    }
    expect(of("task_ended", ids.done)[0]).toMatchObject({ status: "succeeded", duration_ms: expect.any(Number) });
    expect(of("task_ended", ids.stopped)[0]!["status"]).toBe("cancelled");
    expect(of("request_opened", ids.asked)[0]).toMatchObject({ request_id: ids.requestId, kind: "approval" });
    expect(of("request_answered", ids.asked)[0]).toMatchObject({ request_id: ids.requestId, kind: "approval", decision: "approve_once" });
    const order = ["signal_received", "shutdown_started", "shutdown_finished"].map((e) => lines.findIndex((l) => l.event === e));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(lines.find((l) => l.event === "signal_received")!["signal"]).toBe("SIGTERM");
    // no prompt, no workdir content, and the pid and files only in the startup line
    expect(lines.filter((l) => l.event === "rpc_answered")).toEqual([]);
    expect(raw).not.toContain(CANARY);
    expect(raw).not.toContain(env.workspace);
    // lines holds every line but the startup one
    expect(raw).not.toContain(env.stateDir);
    expect(raw).not.toContain(env.dir.path);
  }, 60_000);

  test("a v0.6 database is migrated, and the line says from which schema", async () => {
    const env = bridgeEnv();
    try {
      mkdirSync(env.stateDir, { recursive: true, mode: 0o700 });
      createLegacyDb(env.stateDir, { tasks: [], events: [], requests: [] });
      const bridge = await startBridgeProcess(env);
      await bridge.stop();
      expect(parse(bridge.stderr()).find((l) => l.event === "schema_migrated")).toMatchObject({ from: "v0.6", to: "v0.7" });
      // a second start has nothing to migrate
      const again = await startBridgeProcess(env);
      await again.stop();
      expect(parse(again.stderr()).find((l) => l.event === "schema_migrated")).toBeUndefined();
    } finally {
      env.dir.remove();
    }
  }, 60_000);

  test("debug adds protocol detail: each answered request's method, outcome and time, never its params", async () => {
    const env = bridgeEnv({ config: { server: { log_level: "debug" } } });
    try {
      const bridge = await startBridgeProcess(env);
      const r = await submitAccepted(env.socketPath, { profile: "review", prompt: `complete:${CANARY}` });
      await waitForTask(env.socketPath, r, isTerminalTask);
      await bridge.stop();
      const answered = parse(bridge.stderr()).filter((l) => l.event === "rpc_answered");
      expect(answered.find((l) => l["method"] === "task.submit")).toMatchObject({ level: "DEBUG", ok: true, ms: expect.any(Number) });
      expect(answered.some((l) => l["method"] === "task.get")).toBe(true);
      expect(bridge.stderr()).not.toContain(CANARY);
    } finally {
      env.dir.remove();
    }
  }, 60_000);
});

describe("the maintenance pass in the log", () => {
  const EXPIRED = 3;
  const longAgo = () => new Date(Date.now() - 3 * 3_600_000).toISOString();

  test("each finished pass is one maintenance_pass line with what it did (debug when nothing, info when something); a pass the database refuses is maintenance_pass_failed, and the next pass does the work", async () => {
    const env = bridgeEnv({ lifecycle: { maintenance_interval_seconds: 1, retention_hours: 1 }, config: DEBUG_LOG });
    try {
      const bridge = await startBridgeProcess(env);
      const idle = await bridge.nextLine("maintenance_pass");
      // a pass that did nothing is detail: at the default info level an idle Bridge's log stays quiet
      expect(idle).toMatchObject({ level: "DEBUG", gc_deleted: 0, gc_skipped: 0, findings: 0, duration_ms: expect.any(Number) });

      // a pass has just ended and the next is an interval away: the seeded tasks and the held write
      // lock are both in place before it starts, so its GC step meets the lock
      await bridge.nextLine("maintenance_pass");
      const since = bridge.lines().length;
      seedFinishedTasks(env.stateDir, { count: EXPIRED, newestCompletedAt: longAgo() });
      const blocker = new Database(join(env.stateDir, "state.sqlite3"));
      blocker.run("BEGIN IMMEDIATE");
      const failed = await bridge.nextLine("maintenance_pass_failed", { since });
      blocker.run("ROLLBACK");
      blocker.close();
      expect(failed).toMatchObject({ level: "WARN", step: "gc", error_type: "ServerFsError", error_code: "BRIDGE_STORAGE_ERROR" });
      expect(
        bridge
          .lines()
          .slice(since)
          .filter((l) => l.event === "maintenance_pass" && l["gc_deleted"] !== 0),
      ).toEqual([]);

      const retried = await bridge.nextLine("maintenance_pass", { where: (l) => l["gc_deleted"] !== 0 });
      expect(retried).toMatchObject({ level: "INFO", gc_deleted: EXPIRED, gc_skipped: 0, findings: 0 });
      expect(await bridge.stop()).toBe(0);
      // a type and a step only: neither the database's message nor any path
      expect(bridge.stderr()).not.toContain("locked");
      expect(bridge.stderr()).not.toContain(env.dir.path);
    } finally {
      env.dir.remove();
    }
  }, 60_000);
});
