/**
 * The state database stays the one open (docs/reliability.md#the-state-database-stays-the-one-open):
 * deleted or replaced under a running Bridge, it is noticed (before a submission or a decision, and by
 * each maintenance pass), logged at error level, and submissions and decisions fail closed with
 * BRIDGE_STATE_LOST until a restart; the restart says loudly that the database it expected is gone
 * (docs/decisions.md) and starts on a new one. Real `serverfs bridge` processes, the file removed with
 * `rm` or replaced with `rename`.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import {
  type BridgeEnv,
  type BridgeProcess,
  bridgeEnv,
  call,
  codeOf,
  rpc,
  startBridgeProcess,
  submitAccepted,
  submitTask,
  waitForTask,
} from "../helpers/bridge.ts";
import { cleanup } from "./support.ts";

const envs: BridgeEnv[] = [];
const bridges: BridgeProcess[] = [];

async function started(env: BridgeEnv): Promise<BridgeProcess> {
  const b = await startBridgeProcess(env);
  bridges.push(b);
  return b;
}

function fresh(): BridgeEnv {
  const env = bridgeEnv();
  envs.push(env);
  return env;
}

afterAll(async () => {
  for (const b of bridges) if (b.proc.exitCode === null) await b.stop("SIGKILL");
  await cleanup(envs.map((e) => e.stateDir));
  for (const e of envs) e.dir.remove();
});

const dbPath = (env: BridgeEnv) => join(env.stateDir, "state.sqlite3");

describe("a state database removed or replaced under the Bridge", () => {
  test("removed: the next submit is refused BRIDGE_STATE_LOST and logged; decisions and messages are refused; reads and cancel still answer; the restart says the database is missing", async () => {
    const env = fresh();
    const bridge = await started(env);
    const asked = await submitAccepted(env.socketPath, { prompt: "approval:echo hi" });
    const waiting = await waitForTask(env.socketPath, asked, (t) => t["status"] === "waiting_for_approval");
    const requestId = String((waiting["pending_request"] as Record<string, unknown>)["request_id"]);

    const since = bridge.lines().length;
    rmSync(dbPath(env));
    // the submit itself checks, before any maintenance pass could
    const refused = await submitTask(env.socketPath, { prompt: "complete:never" });
    expect(codeOf(refused)).toBe("BRIDGE_STATE_LOST");
    expect(refused.error?.message).not.toContain(env.dir.path);
    const lost = await bridge.nextLine("state_database_lost", { since });
    expect(lost).toMatchObject({ level: "ERROR", found_by: "request" });

    const approval = await rpc(env.socketPath, "task.approval.respond", { task_id: asked, request_id: requestId, decision: "approve_once" });
    expect(codeOf(approval)).toBe("BRIDGE_STATE_LOST");
    expect(codeOf(await rpc(env.socketPath, "task.message.send", { task_id: asked, message: "go on" }))).toBe("BRIDGE_STATE_LOST");
    expect((await call(env.socketPath, "task.get", { task_id: asked }))["status"]).toBe("waiting_for_approval");
    await call(env.socketPath, "task.cancel", { task_id: asked });
    // logged once, however many requests met it
    expect(bridge.lines().filter((l) => l.event === "state_database_lost").length).toBe(1);

    expect(await bridge.stop()).toBe(0);
    const restarted = await started(env);
    const missing = await restarted.nextLine("state_database_missing", { since: 0 });
    expect(missing).toMatchObject({ level: "ERROR" });
    expect(String(missing["evidence"])).toContain("state.created");
    // started, on a new database: the old task is gone, a new one runs
    expect(codeOf(await rpc(env.socketPath, "task.get", { task_id: asked }))).toBe("AGENT_TASK_NOT_FOUND");
    const next = await submitAccepted(env.socketPath, { prompt: "complete:again" });
    expect((await waitForTask(env.socketPath, next, (t) => t["status"] === "succeeded"))["final_response"]).toBe("again");
    expect(restarted.lines().filter((l) => l.event === "state_database_lost")).toEqual([]);
  }, 60_000);

  test("replaced: the maintenance pass notices it with no request at all, and submissions are refused", async () => {
    const env = fresh();
    const bridge = await started(env);
    await submitAccepted(env.socketPath, { prompt: "complete:before" });
    const since = bridge.lines().length;
    const copy = join(env.dir.path, "copy.sqlite3");
    copyFileSync(dbPath(env), copy);
    renameSync(copy, dbPath(env));
    const lost = await bridge.nextLine("state_database_lost", { since });
    expect(lost).toMatchObject({ level: "ERROR", found_by: "maintenance" });
    expect(codeOf(await submitTask(env.socketPath, { prompt: "complete:never" }))).toBe("BRIDGE_STATE_LOST");
    expect(await bridge.stop()).toBe(0);
  }, 60_000);

  test("killed, then the database removed: the leftover -wal and -shm are set aside and named, never read as the new database's", async () => {
    const env = fresh();
    const bridge = await started(env);
    await submitAccepted(env.socketPath, { prompt: "complete:before" });
    bridge.proc.kill("SIGKILL");
    await bridge.proc.exited;
    expect(existsSync(`${dbPath(env)}-wal`)).toBe(true);
    rmSync(dbPath(env));
    const restarted = await started(env);
    const missing = await restarted.nextLine("state_database_missing", { since: 0 });
    expect(String(missing["evidence"])).toContain("state.sqlite3-wal");
    expect(existsSync(`${dbPath(env)}-wal.lost`)).toBe(true);
    expect(await call(env.socketPath, "task.list")).toMatchObject({ tasks: [] });
    expect(await restarted.stop()).toBe(0);
  }, 60_000);

  test("a first start on an empty state directory says nothing of a missing database", async () => {
    const env = fresh();
    const bridge = await started(env);
    // the log reader has caught up with the startup line: whatever startup logged is in
    await bridge.nextLine("bridge_started", { since: 0 });
    expect(bridge.lines().filter((l) => l.event === "state_database_missing")).toEqual([]);
    expect(existsSync(join(env.stateDir, "state.created"))).toBe(true);
    expect(await bridge.stop()).toBe(0);
  }, 60_000);
});
