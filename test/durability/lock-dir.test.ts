/**
 * One Bridge per lock directory (docs/reliability.md#one-bridge-per-state-and-lock-directory): a second
 * Bridge with its own state directory and socket but the first one's `lock_dir` is refused before it
 * reads a guard, naming the running Bridge, so it never takes the first one's live provider for an
 * orphan; an offline `serverfs recovery clear` of that other state directory is refused the same way.
 * Real `serverfs bridge` processes, a real write task with a provider group.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { readGuard } from "../../src/shared/leases/guard-files.ts";
import {
  type BridgeEnv,
  type BridgeProcess,
  bridgeEnv,
  call,
  markedProcesses,
  recordedMark,
  startBridgeProcess,
  submitAccepted,
  treeTables,
  waitForTask,
} from "../helpers/bridge.ts";
import { runToEnd } from "../helpers/process.ts";
import { REPO_ROOT, SERVERFS, writeConfig } from "../helpers/workspace.ts";
import { cleanup } from "./support.ts";

let env: BridgeEnv;
let first: BridgeProcess;
let otherState: string;

beforeAll(async () => {
  env = bridgeEnv();
  otherState = join(env.dir.path, "state2");
  first = await startBridgeProcess(env);
}, 30_000);

afterAll(async () => {
  if (first && first.proc.exitCode === null) await first.stop("SIGKILL");
  await cleanup([env.stateDir, otherState]);
  env.dir.remove();
});

describe("one Bridge per lock directory", () => {
  test("a second Bridge on another state directory but the same lock_dir is refused naming the first; the first's task and provider are untouched", async () => {
    const id = await submitAccepted(env.socketPath, { profile: "workspace-write", prompt: "spawn:120" });
    await waitForTask(env.socketPath, id, (t) => t["status"] === "running");
    const mark = recordedMark(env.stateDir, id);
    expect(markedProcesses(mark).length).toBeGreaterThan(0);

    const tables = treeTables({ ...env, socketPath: join(env.dir.path, "run2", "b.sock"), stateDir: otherState });
    const config = writeConfig(env.dir.path, { bridge: tables.bridge, workdirs: tables.workdirs }, "second.toml");
    // bounded only so that a Bridge that wrongly starts fails this test instead of hanging it
    const second = await runToEnd([...SERVERFS, "bridge", "--config", config], { cwd: REPO_ROOT, killAfterMs: 60_000 });
    expect(second.stderr).not.toContain('"bridge_started"');
    expect(second.code).toBe(1);
    // the operator's own stderr: the pid and the state directory of the Bridge holding the lock directory
    expect(second.stderr).toContain(
      `serverfs: BRIDGE_ALREADY_RUNNING: another Bridge (pid ${first.proc.pid}) with state directory ${env.stateDir} is using this lock directory`,
    );

    // nothing of the first's run was touched
    expect((await call(env.socketPath, "task.get", { task_id: id }))["status"]).toBe("running");
    expect(markedProcesses(mark).length).toBeGreaterThan(0);
    const guard = readGuard(env.lockDir, 1);
    expect(guard.kind === "valid" && guard.guard.task_id).toBe(id);

    // nor does an offline `recovery clear` of the other state directory reach into the first one's guards
    const clear = await runToEnd([...SERVERFS, "recovery", "clear", "--slot", "1", "--confirm", "--config", config], { cwd: REPO_ROOT, killAfterMs: 60_000 });
    expect(clear.code).toBe(1);
    expect(clear.stderr).toContain(`serverfs: BRIDGE_ALREADY_RUNNING: another Bridge (pid ${first.proc.pid})`);
    expect(readGuard(env.lockDir, 1).kind).toBe("valid");

    await call(env.socketPath, "task.cancel", { task_id: id });
    await waitForTask(env.socketPath, id, (t) => t["status"] === "cancelled");
    expect(await first.stop()).toBe(0);

    // the lock went with the first Bridge: the second now starts on that lock directory
    const again = await startBridgeProcess({ ...env, configPath: config, socketPath: tables.bridge["socket_path"] as string, stateDir: otherState });
    expect(await again.stop()).toBe(0);
  }, 120_000);
});
