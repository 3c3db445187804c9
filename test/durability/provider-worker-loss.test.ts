import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { type RunningBridge, startBridge } from "../../src/main/bridge/startup.ts";
import { loadConfig } from "../../src/shared/config/load.ts";
import { guardPath } from "../../src/shared/leases/guard-files.ts";
import { checkProcessGroup } from "../../src/shared/process-group.ts";
import { Store } from "../../src/shared/store/index.ts";
import { type BridgeEnv, bridgeEnv, call, isTerminalTask, waitForTask } from "../helpers/bridge.ts";
import { poll } from "../helpers/poll.ts";

let env: BridgeEnv;
let bridge: RunningBridge;

beforeAll(async () => {
  env = bridgeEnv();
  bridge = await startBridge(loadConfig({ role: "bridge", configPath: env.configPath }));
});
afterAll(async () => {
  await bridge.stop();
  env.dir.remove();
});

describe("docs/task-model.md#threads a provider worker that dies", () => {
  test("its task ends AGENT_PROVIDER_DISCONNECTED, the group is stopped, the slot is freed, and a new worker runs the next task", async () => {
    const sub = await call(env.socketPath, "task.submit", { runtime: "fake", workdir: "repo", path: "", profile: "workspace-write", prompt: "spawn:30" });
    const taskId = String(sub["task_id"]);
    await waitForTask(env.socketPath, taskId, (t) => t["status"] === "running");
    const store = Store.open(env.stateDir);
    const row = store.getTask(taskId)!;
    store.close();
    expect(checkProcessGroup(row.provider_pgid, row.provider_start_time, row.provider_mark)).toBe("alive");

    bridge.terminateProviderWorker();

    const ended = await waitForTask(env.socketPath, taskId, isTerminalTask, 30_000);
    expect(ended["status"]).toBe("failed");
    expect(ended["error_code"]).toBe("AGENT_PROVIDER_DISCONNECTED");
    await poll(() => !existsSync(guardPath(env.lockDir, 1)), 20_000, "the guard's removal");
    expect(checkProcessGroup(row.provider_pgid, row.provider_start_time, row.provider_mark)).toBe("gone");

    const next = await call(env.socketPath, "task.submit", {
      runtime: "fake",
      workdir: "repo",
      path: "",
      profile: "workspace-write",
      prompt: "complete:after",
    });
    const done = await waitForTask(env.socketPath, String(next["task_id"]), isTerminalTask);
    expect(done["status"]).toBe("succeeded");
    expect(done["final_response"]).toBe("after");
  }, 60_000);
});
