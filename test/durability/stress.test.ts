/**
 * The stress grounds of scripts/stress/ (docs/reliability.md "The stress grounds") at a small size, run
 * as the processes `bun run stress:*` starts: each must end with exit 0 and 0 violations in its JSON.
 * And the checker they share must see each broken invariant it names when one is planted in a real
 * Bridge's state, so a ground reporting 0 means something.
 */
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { generationEnv, killGenerations } from "../../scripts/stress/lib/generations.ts";
import { Violations } from "../../scripts/stress/lib/ground.ts";
import { checkInvariants, type StateView } from "../../scripts/stress/lib/invariants.ts";
import { Ledger } from "../../scripts/stress/lib/ledger.ts";
import { FAKE_RUN_LOG_VARIABLE } from "../../src/workers/fake-provider.ts";
import { allEvents, type BridgeProcess, call, isTerminalTask, startBridgeProcess, waitForTask } from "../helpers/bridge.ts";
import { BUN, REPO_ROOT } from "../helpers/workspace.ts";
import { cleanup, crash, taskRow, writeEnv, writeGuard } from "./support.ts";

async function ground(script: string, args: string[]): Promise<{ code: number; doc: Record<string, unknown> }> {
  const proc = Bun.spawn([BUN, join(REPO_ROOT, "scripts", "stress", script), ...args], { cwd: REPO_ROOT, stdout: "pipe", stderr: "inherit" });
  const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  return { code, doc: JSON.parse(out) as Record<string, unknown> };
}

describe("the stress grounds at a small size", () => {
  test("crash loop: 5 kill -9 cycles under mixed fake tasks, 0 violations", async () => {
    const { code, doc } = await ground("crash-loop.ts", ["--cycles", "5", "--tasks", "5", "--kill-ms", "1500"]);
    expect(doc["violations_by_kind"]).toEqual({});
    expect(code).toBe(0);
    expect(doc["cycles"]).toBe(5);
    expect(doc["tasks_submitted"] as number).toBeGreaterThan(0);
    expect(doc["provider_runs"] as number).toBeGreaterThan(0);
  }, 120_000);

  test("provider-fault matrix: one round of every fault, 0 violations", async () => {
    const { code, doc } = await ground("provider-faults.ts", ["--rounds", "1"]);
    expect(doc["violations_by_kind"]).toEqual({});
    expect(code).toBe(0);
    expect(Object.keys(doc["faults"] as object).sort()).toEqual(
      ["child_outlives_leader", "child_setsid", "crash", "garbage_line", "hang", "over_cap_line", "stderr_flood"].sort(),
    );
  }, 120_000);

  test("disk-full run: one fill and free under running tasks, 0 violations (skipped with a warning without root)", async () => {
    const { code, doc } = await ground("disk-full.ts", ["--rounds", "1", "--full-ms", "1500"]);
    expect(code).toBe(0);
    if (doc["skipped"] === true) return console.warn("stress.test.ts: disk-full ground SKIPPED — mounting a tmpfs was refused (needs root)");
    expect(doc["violations_by_kind"]).toEqual({});
    expect((doc["refusals"] as Record<string, number>)["BRIDGE_STORAGE_ERROR"]).toBeGreaterThan(0);
  }, 120_000);
});

describe("the shared checker sees what it names", () => {
  const setup = writeEnv(2, { lifecycle: { maintenance_interval_seconds: 1 } });
  const { env } = setup;
  const run = `checker${process.pid}`;
  const view: StateView = { socketPath: env.socketPath, stateDir: env.stateDir, lockDir: env.lockDir, slots: 2, runLog: join(env.dir.path, "runs.log") };
  const bridges: BridgeProcess[] = [];

  afterAll(async () => {
    for (const b of bridges) if (b.proc.exitCode === null) await b.stop();
    killGenerations(run);
    await cleanup([env.stateDir]);
    setup.remove();
  });

  test("a clean state has no violation; planted faults are each reported by kind", async () => {
    const start = async (generation: number) => {
      const b = await startBridgeProcess(env, { ...generationEnv(run, generation), [FAKE_RUN_LOG_VARIABLE]: view.runLog });
      bridges.push(b);
      return b;
    };
    const first = await start(0);
    const ledger = new Ledger();
    const done = await call<{ task_id: string }>(env.socketPath, "task.submit", {
      runtime: "fake",
      workdir: "repo",
      path: "",
      profile: "review",
      prompt: "events:5",
    });
    ledger.submitted({ taskId: done.task_id, prompt: "events:5", profile: "review", slot: 1, expectFinal: "events=5", events: 5 });
    ledger.sawTask(await waitForTask(env.socketPath, done.task_id, isTerminalTask));
    ledger.sawEvents(done.task_id, await allEvents(env.socketPath, done.task_id));
    // the crash leaves this provider's grandchild behind; the restart terminates it, so the clean check sees no orphan
    const orphan = await call<{ task_id: string }>(env.socketPath, "task.submit", {
      runtime: "fake",
      workdir: "repo",
      path: "",
      profile: "review",
      prompt: "spawn:120",
    });
    await waitForTask(env.socketPath, orphan.task_id, (t) => t["status"] === "running");
    await crash(first);
    await start(1);

    const clean = new Violations();
    const figures = await checkInvariants(view, ledger, clean, { settled: true, run: { id: run, generation: 1 } });
    expect(clean.byKind()).toEqual({});
    expect(figures.runs).toBe(2);

    // a second run of the finished task, one of its acknowledged events gone, a guard nobody needs,
    // a process of the previous generation alive, and a submit answered but missing
    appendFileSync(view.runLog, `${done.task_id} 1\n`);
    const db = new Database(join(env.stateDir, "state.sqlite3"));
    db.run("PRAGMA busy_timeout = 5000");
    db.run("DELETE FROM events WHERE event_id = (SELECT max(event_id) FROM events WHERE task_id = ? AND event_type = 'agent.message')", [done.task_id]);
    db.close();
    writeGuard(env.lockDir, 2, { task_id: done.task_id, slot: 2 });
    const stray = Bun.spawn(["sleep", "60"], { env: { ...process.env, ...generationEnv(run, 0) }, stdio: ["ignore", "ignore", "ignore"] });
    ledger.submitted({ taskId: "agt_000000000000000000000000", prompt: "complete:x", profile: "review", slot: 1, expectFinal: "x", events: null });

    const planted = new Violations();
    await checkInvariants(view, ledger, planted, { settled: true, run: { id: run, generation: 1 } });
    stray.kill("SIGKILL");
    expect(Object.keys(planted.byKind()).sort()).toEqual(
      ["acked_event_lost", "acked_task_lost", "event_count_mismatch", "event_gap", "guard_left", "orphan_alive", "ran_twice"].sort(),
    );
    expect(taskRow(env.stateDir, done.task_id)?.status).toBe("succeeded");
  }, 60_000);
});
