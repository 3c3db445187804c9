/**
 * Submit does not wait for housekeeping (docs/reliability.md "The Bridge under faults"): a submit
 * asks for a retention GC pass but answers without waiting for it, and an idempotency lookup that
 * finds an expired task collects that one task unit first (spool file included), so its key is free
 * at once. Ten thousand expired tasks make a pass long enough to see whether the submit waited for it.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { seedFinishedTasks } from "../../scripts/bench/lib/bridge-seed.ts";
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
import { holdsWithin } from "../helpers/poll.ts";

const EXPIRED = 10_000;

// the periodic pass is kept out of the way: only the submit asks for one here
const env: BridgeEnv = bridgeEnv({ lifecycle: { maintenance_interval_seconds: 3600, retention_hours: 1 } });
let bridge: BridgeProcess;

const db = (): Database => {
  const d = new Database(join(env.stateDir, "state.sqlite3"));
  d.run("PRAGMA busy_timeout = 5000");
  return d;
};

function expiredLeft(cutoff: string): number {
  const d = db();
  try {
    return d.query<{ n: number }, [string]>("SELECT COUNT(*) AS n FROM tasks WHERE completed_at < ?").get(cutoff)!.n;
  } finally {
    d.close();
  }
}

beforeAll(async () => {
  bridge = await startBridgeProcess(env);
}, 30_000);

afterAll(async () => {
  await bridge?.stop();
  env.dir.remove();
});

describe("a submit and the retention GC pass", () => {
  test("the submit answers before the pass is done; an expired task with the key is collected first, so the key is free", async () => {
    // a spooled result, so the unit has a spool file too
    const params = { prompt: "repeat:262145:a", idempotency_key: "k-expired" };
    const first = await submitTask(env.socketPath, params);
    const oldId = String(first.result!["task_id"]);
    await waitForTask(env.socketPath, oldId, isTerminalTask);
    const completedLongAgo = new Date(Date.now() - 3 * 3_600_000).toISOString();
    const spoolFile = join(env.stateDir, "results", `${oldId}.txt`);
    expect(existsSync(spoolFile)).toBe(true);
    seedFinishedTasks(env.stateDir, { count: EXPIRED, newestCompletedAt: completedLongAgo });
    const d = db();
    try {
      d.query("UPDATE tasks SET completed_at = ? WHERE task_id = ?").run(completedLongAgo, oldId);
    } finally {
      d.close();
    }
    const cutoff = new Date(Date.now() - 3_600_000).toISOString();
    expect(expiredLeft(cutoff)).toBe(EXPIRED + 1);

    // the same request again: not a replay of the expired task but a new one, the old unit gone
    const again = await submitTask(env.socketPath, params);
    const left = expiredLeft(cutoff);
    expect(again.ok).toBe(true);
    const newId = String(again.result!["task_id"]);
    expect(newId).not.toBe(oldId);
    expect(codeOf(await rpc(env.socketPath, "task.get", { task_id: oldId }))).toBe("AGENT_TASK_NOT_FOUND");
    expect(existsSync(spoolFile)).toBe(false);
    // the submit did not wait for the pass: most of the expired tasks were still there when it answered
    console.log(JSON.stringify({ expired: EXPIRED, left_when_submit_answered: left }));
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(EXPIRED);

    // the pass it asked for still runs to the end: every expired unit goes
    await holdsWithin(() => expiredLeft(cutoff) === 0, 60_000);
    expect(expiredLeft(cutoff)).toBe(0);
    expect((await waitForTask(env.socketPath, newId, isTerminalTask))["status"]).toBe("succeeded");
    expect((await call(env.socketPath, "task.get", { task_id: newId }))["result"]).toMatchObject({ storage: "spool" });
  }, 120_000);
});
