/**
 * A step of the system clock neither ends nor postpones anything while the Bridge runs
 * (docs/task-model.md#time-and-clocks): deadlines, request expiries and the stop grace count on the
 * monotonic clock. Each Bridge here runs under libfaketime (test/helpers/faketime.ts), whose offset the
 * test rewrites mid-run: only the wall clock steps, as with `date -s` or an NTP step. Each test first
 * checks its premise — the Bridge's own log timestamps show the step, and what is timed had not ended
 * when the clock stepped.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { bridgeEnv, call, DEBUG_LOG, rpc, startBridgeProcess, submitAccepted, waitForTask } from "../helpers/bridge.ts";
import { libfaketime, SteppedClock } from "../helpers/faketime.ts";
import { poll } from "../helpers/poll.ts";
import { bridgesOfFile, mcpView, startStray, taskRow } from "./support.ts";

const HOUR_MS = 3_600_000;
const lib = libfaketime();
if (lib === null && process.env["CI"] === "true") {
  test("libfaketime is installed (Debian's faketime, as .ci/run installs it)", () => {
    expect(lib).not.toBeNull();
  });
} else if (lib === null) {
  console.warn("\n!!! SKIPPING test/durability/clock-steps.test.ts: needs libfaketime (apt-get install faketime)\n");
}

const { envs, bridges } = bridgesOfFile();

async function steppedBridge(lifecycle: Record<string, number>) {
  const env = bridgeEnv({ lifecycle: { maintenance_interval_seconds: 1, ...lifecycle }, config: DEBUG_LOG });
  envs.push(env);
  const clock = new SteppedClock(env.dir.path, lib!);
  const bridge = await startBridgeProcess(env, clock.env());
  bridges.push(bridge);
  return { env, clock, bridge };
}

/** Whether a log line was stamped `offsetMs` away from the real time: the Bridge's wall clock had stepped. */
const stampedAt = (line: Record<string, unknown>, offsetMs: number) => Math.abs(Date.parse(String(line["timestamp"])) - Date.now() - offsetMs) < HOUR_MS / 2;

/** Steps the clock and waits until the Bridge's own log shows it. */
async function stepAndSee(s: Awaited<ReturnType<typeof steppedBridge>>, offset: string, offsetMs: number): Promise<void> {
  const since = s.bridge.lines().length;
  s.clock.step(offset);
  await s.bridge.nextLine("maintenance_pass", { since, where: (l) => stampedAt(l, offsetMs) });
}

const status = async (sock: string, taskId: string) => call(sock, "task.get", { task_id: taskId });

describe.skipIf(lib === null)("a step of the system clock", () => {
  test("+2 h ends no active task and expires no request: after two sweeps the tasks go on and the reply is taken", async () => {
    const s = await steppedBridge({ task_timeout_seconds: 3600, interaction_timeout_seconds: 1800 });
    const sock = s.env.socketPath;
    const running = await submitAccepted(sock, { prompt: "wait:" });
    const asking = await submitAccepted(sock, { prompt: "approval:npm test" });
    await waitForTask(sock, running, (t) => t["status"] === "running");
    const waiting = await waitForTask(sock, asking, (t) => t["status"] === "waiting_for_approval");
    const requestId = String(waiting["pending_request_id"]);

    await stepAndSee(s, "+2h", 2 * HOUR_MS);
    await s.bridge.afterFullPass();
    await s.bridge.afterFullPass();
    // on 7e2dbe6 the sweep compared deadline_at and expires_at with the wall clock: both tasks were interrupted
    expect(await status(sock, running)).toMatchObject({ status: "running", error_code: null });
    expect(await status(sock, asking)).toMatchObject({ status: "waiting_for_approval", pending_request_id: requestId });

    // a late reply's own check counts on the monotonic clock too
    const reply = await rpc(sock, "task.approval.respond", { task_id: asking, request_id: requestId, decision: "approve_once" });
    expect(reply.error).toBeUndefined();
    expect(await waitForTask(sock, asking, (t) => t["status"] === "succeeded")).toMatchObject({ final_response: "approval=approve_once" });
    expect((await call(sock, "task.cancel", { task_id: running }))["status"]).toBe("cancelled");
  }, 90_000);

  test("−1 h postpones neither a deadline nor a request expiry", async () => {
    const s = await steppedBridge({ task_timeout_seconds: 16, interaction_timeout_seconds: 10 });
    const sock = s.env.socketPath;
    const running = await submitAccepted(sock, { prompt: "wait:" });
    const asking = await submitAccepted(sock, { prompt: "approval:npm test" });
    await waitForTask(sock, running, (t) => t["status"] === "running");
    await waitForTask(sock, asking, (t) => t["status"] === "waiting_for_approval");
    await stepAndSee(s, "-1h", -HOUR_MS);
    // the premise: the step came before either time ran out
    expect((await status(sock, running))["status"]).toBe("running");
    expect((await status(sock, asking))["status"]).toBe("waiting_for_approval");

    // on 7e2dbe6 both timers re-armed for another hour when they fired
    expect(await waitForTask(sock, asking, (t) => t["status"] === "interrupted", 40_000)).toMatchObject({
      error_code: "AGENT_INTERACTION_TIMED_OUT",
    });
    expect(await waitForTask(sock, running, (t) => t["status"] === "interrupted", 40_000)).toMatchObject({ error_code: "AGENT_TASK_TIMED_OUT" });
  }, 90_000);

  /**
   * A write task whose provider ends on its own while a marked stray (support.ts) ignores SIGTERM: the
   * finally path sends SIGTERM, waits the 5 s grace, then SIGKILLs it. Resolves once that grace has
   * begun — the stray noted the SIGTERM — with the moment that was seen.
   */
  async function inGrace(s: Awaited<ReturnType<typeof steppedBridge>>) {
    const taskId = await submitAccepted(s.env.socketPath, { profile: "workspace-write", prompt: "sleep:3000:slept" });
    await waitForTask(s.env.socketPath, taskId, (t) => t["status"] === "running");
    const termLog = join(s.env.dir.path, "term.log");
    await startStray(taskRow(s.env.stateDir, taskId)!.provider_mark!, termLog).child();
    await poll(() => existsSync(termLog) && readFileSync(termLog, "utf8").includes("term"), 20_000, "the stray getting SIGTERM");
    return { taskId, seenAt: performance.now() };
  }

  test("−1 h during the SIGTERM grace does not stretch it", async () => {
    const s = await steppedBridge({});
    const { taskId } = await inGrace(s);
    s.clock.step("-1h");
    // the premise: the finally path still holds the lease (it is in its grace)
    expect(mcpView(s.env.lockDir, 1)).toBe("busy");
    // on 7e2dbe6 the grace was measured on the wall clock: the slot stayed busy for another hour
    await poll(() => mcpView(s.env.lockDir, 1) === "free", 30_000, "the slot freed after the grace");
    // and the run's end was logged on the stepped clock
    expect(stampedAt(await s.bridge.nextLine("task_ended", { since: 0, where: (l) => l["task_id"] === taskId }), -HOUR_MS)).toBe(true);
  }, 60_000);

  test("+2 h during the SIGTERM grace does not cut it short, nor the proof after SIGKILL", async () => {
    const s = await steppedBridge({});
    const { taskId, seenAt } = await inGrace(s);
    s.clock.step("+2h");
    expect(mcpView(s.env.lockDir, 1)).toBe("busy");
    await poll(() => mcpView(s.env.lockDir, 1) === "free", 30_000, "the slot freed after the grace");
    // the grace began just before `seenAt` (the stray's note, then one poll), so nearly all of its 5 s
    // is still to come; on 7e2dbe6 the step ended it at once (SIGKILL within 0.2 s), and the proof window with it
    expect(performance.now() - seenAt).toBeGreaterThanOrEqual(4_000);
    expect(stampedAt(await s.bridge.nextLine("task_ended", { since: 0, where: (l) => l["task_id"] === taskId }), 2 * HOUR_MS)).toBe(true);
    expect(s.bridge.lines().filter((l) => l.event === "recovery.guard_kept" && l["task_id"] === taskId)).toEqual([]);
  }, 60_000);
});
