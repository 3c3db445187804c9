/**
 * A full disk fails tasks, never the Bridge (docs/reliability.md "The Bridge under faults"). The
 * state directory and the lock directory are small tmpfs mounts (root mounts them; where mount is
 * refused the test is skipped with a warning). With tasks running, both are filled to the last byte:
 * the Bridge keeps answering reads, every write it cannot make ends that request or task with
 * BRIDGE_STORAGE_ERROR, the write slot stays fail-closed, and once space is back it records what it
 * could not, clears the guard and runs new tasks — without a restart.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type BridgeEnv,
  type BridgeProcess,
  bridgeEnv,
  call,
  codeOf,
  isTerminalTask,
  rpc,
  startBridgeProcess,
  submitTask,
  waitForTask,
} from "../helpers/bridge.ts";
import { poll } from "../helpers/poll.ts";
import { fill, mountTmpfs, unmount } from "../helpers/tmpfs.ts";
import { cleanup, mcpView } from "./support.ts";

const env: BridgeEnv = bridgeEnv({ lifecycle: { maintenance_interval_seconds: 1, max_active_tasks: 32 } });
const mounts = [env.stateDir, env.lockDir];

const mounted = mountTmpfs(env.stateDir, "6m") && mountTmpfs(env.lockDir, "1m");
if (!mounted) console.warn("disk-full.test.ts: SKIPPED — mounting a tmpfs was refused (needs root); the injected-lock test still runs");

let bridge: BridgeProcess;

beforeAll(async () => {
  if (mounted) bridge = await startBridgeProcess(env);
}, 30_000);

afterAll(async () => {
  for (const m of mounts) rmSync(join(m, "filler"), { force: true });
  await bridge?.stop();
  await cleanup([env.stateDir]);
  for (const m of mounts) unmount(m);
  env.dir.remove();
});

describe.skipIf(!mounted)("a full disk under the state and lock directories", () => {
  test("tasks and requests end with BRIDGE_STORAGE_ERROR, reads go on, the slot fails closed, and all recovers once space is back", async () => {
    // running before the disk fills, ending while it is full: a write task (guard and lease), review tasks
    const write = await call<{ task_id: string }>(env.socketPath, "task.submit", {
      runtime: "fake",
      workdir: "repo",
      path: "",
      profile: "workspace-write",
      prompt: "gate:full-gate:w",
    });
    const enders = [write.task_id];
    for (let i = 0; i < 3; i++) {
      enders.push(
        (
          await call<{ task_id: string }>(env.socketPath, "task.submit", {
            runtime: "fake",
            workdir: "repo",
            path: "",
            profile: "review",
            prompt: `gate:full-gate:r${i}`,
          })
        ).task_id,
      );
    }
    const review = await call<{ task_id: string }>(env.socketPath, "task.submit", {
      runtime: "fake",
      workdir: "repo",
      path: "",
      profile: "review",
      prompt: "wait:",
    });
    for (const id of [...enders, review.task_id]) await waitForTask(env.socketPath, id, (x) => x["status"] === "running");
    expect(mcpView(env.lockDir, 1)).toBe("busy");

    const fillers = mounts.map(fill);

    // writes fail: submits until one is refused (free pages in the database file may take a few)
    const accepted: string[] = [];
    let refused: string | undefined;
    for (let i = 0; i < 200 && refused === undefined; i++) {
      const r = await submitTask(env.socketPath, { prompt: `events:50` });
      if (r.ok) accepted.push(String(r.result!["task_id"]));
      else refused = codeOf(r);
    }
    expect(refused).toBe("BRIDGE_STORAGE_ERROR");
    // a cancel is a write too: refused (or, with pages left, it goes through)
    const cancel = await rpc(env.socketPath, "task.cancel", { task_id: review.task_id });
    expect(cancel.ok || codeOf(cancel) === "BRIDGE_STORAGE_ERROR").toBe(true);
    // the gated runs end now, while the disk is full, and their ends cannot be written
    writeFileSync(join(env.workspace, "full-gate"), "");
    await poll(() => enders.every((id) => bridge.stderr().includes(`"task_state_unrecorded","task_id":"${id}"`)), 20_000);
    for (const id of enders) expect((await call(env.socketPath, "task.get", { task_id: id }))["status"]).toBe("running");
    // fail closed: the write run is over and its lease free, but its guard stays
    await poll(() => mcpView(env.lockDir, 1) === "recovery_required", 20_000);
    const blocked = await submitTask(env.socketPath, { profile: "workspace-write", prompt: "complete:x" });
    expect(["BRIDGE_STORAGE_ERROR", "WORKDIR_RECOVERY_REQUIRED"]).toContain(codeOf(blocked) ?? "accepted");

    // the Bridge lives and serves reads while nothing can be written
    const readUntil = Date.now() + 3_000;
    while (Date.now() < readUntil) {
      for (const id of [...enders, review.task_id, ...accepted]) {
        const r = await rpc(env.socketPath, "task.get", { task_id: id });
        expect(r.ok).toBe(true);
      }
      expect((await rpc(env.socketPath, "task.events", { task_id: review.task_id })).ok).toBe(true);
    }
    expect(bridge.proc.exitCode).toBeNull();
    expect(mcpView(env.lockDir, 1)).toBe("recovery_required");

    // space is back: what could not be recorded is, the guard goes, new work runs
    for (const f of fillers) rmSync(f);
    if (!cancel.ok) await call(env.socketPath, "task.cancel", { task_id: review.task_id });
    // the sweep records the runs that ended while nothing could be written
    for (const id of enders) {
      const t = await waitForTask(env.socketPath, id, isTerminalTask, 30_000);
      expect([t["status"], t["error_code"]]).toEqual(["interrupted", "BRIDGE_STORAGE_ERROR"]);
    }
    const ends = new Map<string, number>();
    for (const id of [review.task_id, ...accepted]) {
      const t = await waitForTask(env.socketPath, id, isTerminalTask, 30_000);
      const end = `${t["status"]} ${t["error_code"] ?? ""}`.trim();
      ends.set(end, (ends.get(end) ?? 0) + 1);
    }
    console.log(JSON.stringify({ accepted_while_full: accepted.length, ends: Object.fromEntries(ends) }));
    for (const end of ends.keys()) {
      expect(["succeeded", "cancelled", "failed BRIDGE_STORAGE_ERROR", "interrupted BRIDGE_STORAGE_ERROR"]).toContain(end);
    }
    await poll(() => mcpView(env.lockDir, 1) === "free", 20_000);
    const fresh = await call<{ task_id: string }>(env.socketPath, "task.submit", {
      runtime: "fake",
      workdir: "repo",
      path: "",
      profile: "workspace-write",
      prompt: "complete:after",
    });
    const done = await waitForTask(env.socketPath, fresh.task_id, isTerminalTask);
    expect(done["status"]).toBe("succeeded");
    expect(done["final_response"]).toBe("after");
    expect(bridge.proc.exitCode).toBeNull();
    expect(bridge.stderr()).not.toContain(env.dir.path);
  }, 120_000);
});

describe("a database locked past the busy timeout (an injected fault, no mount needed)", () => {
  const locked: BridgeEnv = bridgeEnv({ lifecycle: { maintenance_interval_seconds: 1 } });
  let lockedBridge: BridgeProcess;

  beforeAll(async () => {
    lockedBridge = await startBridgeProcess(locked);
  }, 30_000);

  afterAll(async () => {
    await lockedBridge?.stop();
    await cleanup([locked.stateDir]);
    locked.dir.remove();
  });

  test("a run that ends under the lock is recorded BRIDGE_STORAGE_ERROR once it is released; a submit under it is refused", async () => {
    const task = await call<{ task_id: string }>(locked.socketPath, "task.submit", {
      runtime: "fake",
      workdir: "repo",
      path: "",
      profile: "workspace-write",
      prompt: "gate:lock-gate:done",
    });
    await waitForTask(locked.socketPath, task.task_id, (x) => x["status"] === "running");
    // another process holds the write lock far past the Bridge's 5 s busy timeout
    const holder = new Database(join(locked.stateDir, "state.sqlite3"));
    // the Bridge is writing the run's events right now: wait for its write to end, as a real process would
    holder.run("PRAGMA busy_timeout = 10000");
    holder.run("BEGIN IMMEDIATE");
    let submit: Awaited<ReturnType<typeof submitTask>>;
    try {
      // the run ends now, under the lock
      writeFileSync(join(locked.workspace, "lock-gate"), "");
      submit = await submitTask(locked.socketPath, { prompt: "complete:x" });
      await poll(() => lockedBridge.stderr().includes(`"task_state_unrecorded","task_id":"${task.task_id}"`), 30_000);
      // the run is over and its lease free, but its guard stays
      await poll(() => mcpView(locked.lockDir, 1) === "recovery_required", 30_000);
    } finally {
      holder.run("ROLLBACK");
      holder.close();
    }
    expect(codeOf(submit)).toBe("BRIDGE_STORAGE_ERROR");
    const t = await waitForTask(locked.socketPath, task.task_id, isTerminalTask, 30_000);
    expect([t["status"], t["error_code"]]).toEqual(["interrupted", "BRIDGE_STORAGE_ERROR"]);
    await poll(() => mcpView(locked.lockDir, 1) === "free", 20_000);
    const fresh = await call<{ task_id: string }>(locked.socketPath, "task.submit", {
      runtime: "fake",
      workdir: "repo",
      path: "",
      profile: "workspace-write",
      prompt: "complete:after",
    });
    expect((await waitForTask(locked.socketPath, fresh.task_id, isTerminalTask))["status"]).toBe("succeeded");
    expect(lockedBridge.proc.exitCode).toBeNull();
  }, 120_000);
});
