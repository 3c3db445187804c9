/**
 * Exclusion (docs/task-model.md#threads instance lock, docs/task-model.md#lease-files-and-the-active-slot-guard writer leases, docs/task-model.md#lease-files-and-the-active-slot-guard): one Bridge per state
 * directory, one write task per slot, with real processes and real lock files.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readGuard } from "../../src/shared/leases/guard-files.ts";
import {
  type BridgeEnv,
  type BridgeProcess,
  bridgeEnv,
  call,
  codeOf,
  type RpcResponse,
  startBridgeProcess,
  submitTask,
  waitForTask,
} from "../helpers/bridge.ts";
import { poll } from "../helpers/poll.ts";
import { runCli } from "../helpers/process.ts";
import { writeConfig } from "../helpers/workspace.ts";
import { cleanup, mcpView } from "./support.ts";

let env: BridgeEnv;
let bridge: BridgeProcess;

beforeAll(async () => {
  env = bridgeEnv();
  bridge = await startBridgeProcess(env);
}, 30_000);

afterAll(async () => {
  if (bridge && bridge.proc.exitCode === null) await bridge.stop("SIGKILL");
  await cleanup([env.stateDir]);
  env.dir.remove();
});

describe("one Bridge per state directory", () => {
  test("a second Bridge on the same state_dir fails with BRIDGE_ALREADY_RUNNING (exit 1) before touching anything else", async () => {
    // its own socket and lock directory, so only the state directory is shared
    const otherSocket = join(env.dir.path, "run2", "b.sock");
    const otherLocks = join(env.dir.path, "locks2");
    const config = writeConfig(
      env.dir.path,
      {
        bridge: { enabled: true, enable_fake_runtime: true, socket_path: otherSocket, state_dir: env.stateDir, lock_dir: otherLocks },
        workdirs: [{ slot: 1, alias: "repo", path: env.workspace, read_only: false, agent_mode: "workspace-write", agent_runtimes: ["fake"] }],
      },
      "second.toml",
    );
    const second = await runCli(["bridge", "--config", config]);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain("serverfs: BRIDGE_ALREADY_RUNNING: ");
    expect(second.stderr).not.toContain('"bridge_started"');
    expect(existsSync(otherLocks)).toBe(false);
    expect(existsSync(join(env.dir.path, "run2"))).toBe(false);
    // the first one still serves
    expect(await call(env.socketPath, "runtime.list")).toHaveProperty("runtimes");
  });
});

describe("one write task per slot", () => {
  test("a second write task on a held slot is WORKDIR_BUSY; a review task takes no lease; after the first ends the second runs", async () => {
    // the first task holds its lease until the test opens its gate (docs/runtimes.md#fake)
    const first = await submitTask(env.socketPath, { profile: "workspace-write", prompt: "gate:first-gate:first" });
    expect(first.ok).toBe(true);
    const firstId = String(first.result!["task_id"]);
    await waitForTask(env.socketPath, firstId, (t) => t["status"] === "running");
    // the MCP role sees the held lease as busy
    expect(mcpView(env.lockDir, 1)).toBe("busy");
    expect(codeOf(await submitTask(env.socketPath, { profile: "workspace-write", prompt: "complete:second" }))).toBe("WORKDIR_BUSY");
    const review = await submitTask(env.socketPath, { profile: "review", prompt: "complete:read only" });
    expect(review.ok).toBe(true);
    await waitForTask(env.socketPath, String(review.result!["task_id"]), (t) => t["status"] === "succeeded");

    writeFileSync(join(env.workspace, "first-gate"), "");
    await waitForTask(env.socketPath, firstId, (t) => t["status"] === "succeeded");
    // the lease is released at the end of the finally path, a moment after the terminal state
    let second: RpcResponse | undefined;
    await poll(
      async () => {
        second = await submitTask(env.socketPath, { profile: "workspace-write", prompt: "complete:second" });
        return codeOf(second) !== "WORKDIR_BUSY";
      },
      10_000,
      "a write submit past the released lease",
    );
    expect(second!.ok).toBe(true);
    const done = await waitForTask(env.socketPath, String(second!.result!["task_id"]), (t) => t["status"] === "succeeded");
    expect(done["final_response"]).toBe("second");
    await poll(() => mcpView(env.lockDir, 1) === "free");
    expect(readGuard(env.lockDir, 1).kind).toBe("absent");
  });
});
