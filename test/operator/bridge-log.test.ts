/**
 * The Bridge's operational log (docs/deployment.md "Logs"): at `info`, one JSON object per line for
 * startup (version, pid and the operator's own files), every task's submit / start / end (ids, runtime,
 * profile, status, error code, duration), approvals asked and answered (ids and decision, never
 * content), signals and shutdown. A real Bridge process over its socket.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { bridgeEnv, call, isTerminalTask, startBridgeProcess, waitForTask } from "../helpers/bridge.ts";
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
    const submit = async (prompt: string) =>
      (await call<{ task_id: string }>(env.socketPath, "task.submit", { runtime: "fake", workdir: "repo", path: "", profile: "review", prompt })).task_id;
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
      const r = await call<{ task_id: string }>(env.socketPath, "task.submit", { runtime: "fake", workdir: "repo", path: "", profile: "review", prompt: `complete:${CANARY}` });
      await waitForTask(env.socketPath, r.task_id, isTerminalTask);
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
