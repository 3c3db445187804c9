/**
 * Event ingestion through the event writer thread (docs/events.md#appending, docs/task-model.md#threads)
 * against a real `serverfs bridge`: a flood of `events:N` tasks, review and workspace-write, stored
 * whole when nothing goes wrong, and killed with SIGKILL mid-flood then restarted, where the
 * invariants of docs/reliability.md must hold (checked by the stress grounds' own checker): each
 * task's committed events are a gapless prefix `event 1..n` in order, each once, `event_count` counts
 * them, no task ran twice, a guard is left exactly where a stop was unproven, and every event a
 * client read before the kill is still there.
 */
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { generationEnv, killGenerations } from "../../scripts/stress/lib/generations.ts";
import { Violations } from "../../scripts/stress/lib/ground.ts";
import { checkInvariants, type StateView, viewOf } from "../../scripts/stress/lib/invariants.ts";
import { Ledger } from "../../scripts/stress/lib/ledger.ts";
import { DB_FILE } from "../../src/shared/store/index.ts";
import { FAKE_RUN_LOG_VARIABLE } from "../../src/workers/fake-provider.ts";
import { type BridgeProcess, call, type EventEnvelope, isTerminalTask, startBridgeProcess, waitForTask } from "../helpers/bridge.ts";
import { poll } from "../helpers/poll.ts";
import { aliasOf, cleanup, crash, mcpView, type WriteEnv, writeEnv } from "./support.ts";

const SLOTS = 2;
/** Per task: most of the 10,000 cap, so a flood lasts long enough to be cut. */
const EVENTS = 8_000;
/** Two workspace-write tasks (one per slot, each with a guard) and four review tasks. */
const PROFILES = ["workspace-write", "workspace-write", "review", "review", "review", "review"] as const;

const setups: WriteEnv[] = [];
const bridges: BridgeProcess[] = [];
const runs: string[] = [];

afterAll(async () => {
  for (const b of bridges) if (b.proc.exitCode === null && b.proc.signalCode === null) await b.stop("SIGKILL");
  for (const run of runs) killGenerations(run);
  await cleanup(setups.map((s) => s.env.stateDir));
  for (const s of setups) s.remove();
});

interface Ground {
  view: StateView;
  ledger: Ledger;
  start(generation: number): Promise<BridgeProcess>;
}

function ground(name: string): Ground {
  const w = writeEnv(SLOTS, { lifecycle: { max_active_tasks: PROFILES.length } });
  setups.push(w);
  const run = `${name}${process.pid}`;
  runs.push(run);
  const view = viewOf(w, SLOTS);
  return {
    view,
    ledger: new Ledger(),
    async start(generation) {
      const b = await startBridgeProcess(w.env, { ...generationEnv(run, generation), [FAKE_RUN_LOG_VARIABLE]: view.runLog });
      bridges.push(b);
      return b;
    },
  };
}

/** Submits the flood: every task at once, each written down in the ledger with the events it must end with. */
async function flood(g: Ground): Promise<string[]> {
  const prompt = `events:${EVENTS}`;
  return Promise.all(
    PROFILES.map(async (profile, i) => {
      const slot = profile === "workspace-write" ? i + 1 : 1;
      const { task_id } = await call<{ task_id: string }>(g.view.socketPath, "task.submit", {
        runtime: "fake",
        workdir: aliasOf(slot),
        path: "",
        profile,
        prompt,
      });
      g.ledger.submitted({ taskId: task_id, prompt, profile, slot, expectFinal: `events=${EVENTS}`, events: EVENTS });
      return task_id;
    }),
  );
}

/** Provider events committed so far, per task, read on a connection of our own. */
function committed(stateDir: string): Map<string, number> {
  const db = new Database(join(stateDir, DB_FILE), { readonly: true });
  try {
    db.run("PRAGMA busy_timeout = 5000");
    const rows = db
      .query<{ task_id: string; n: number }, []>("SELECT task_id, count(*) AS n FROM events WHERE event_type = 'agent.message' GROUP BY task_id")
      .all();
    return new Map(rows.map((r) => [r.task_id, r.n]));
  } finally {
    db.close();
  }
}

/** The first page of each task's events, as a client following it would have read them: acknowledged. */
async function readFirstPages(g: Ground, ids: string[]): Promise<void> {
  for (const id of ids) {
    const page = await call<{ events: EventEnvelope[] }>(g.view.socketPath, "task.events", { task_id: id, after_event_id: 0, limit: 500 });
    g.ledger.sawEvents(id, page.events);
  }
}

async function violations(g: Ground, run: { id: string; generation: number }): Promise<Record<string, number>> {
  const v = new Violations();
  await checkInvariants(g.view, g.ledger, v, { settled: true, run });
  return v.byKind();
}

describe("a flood of provider events through the event writer", () => {
  test("without a crash: every task succeeds with every event stored once, in order, counted", async () => {
    const g = ground("flood");
    await g.start(0);
    const ids = await flood(g);
    for (const id of ids) g.ledger.sawTask(await waitForTask(g.view.socketPath, id, isTerminalTask, 60_000));
    for (const id of ids) expect(g.ledger.terminal.get(id)).toBe("succeeded");
    const stored = committed(g.view.stateDir);
    for (const id of ids) expect(stored.get(id)).toBe(EVENTS);
    // a run's finally path releases the lease after its end is stored (docs/task-model.md#the-finally-path):
    // the settled check reads the slots once every run has released them
    await poll(() => [...Array(g.view.slots).keys()].every((i) => mcpView(g.view.lockDir, i + 1) === "free"), 30_000, "every slot free");
    // the checker reads every event: `event 1..N` in order (event_gap), task.started + N + task.completed
    // counted in the row (event_count_mismatch), one run each (ran_twice), no guard left
    expect(await violations(g, { id: `flood${process.pid}`, generation: 0 })).toEqual({});
  }, 120_000);

  test("kill -9 mid-flood, then restart: gapless prefixes, counted, nothing read lost, nothing run twice, guards only where a stop was unproven", async () => {
    const g = ground("floodcrash");
    const first = await g.start(0);
    const ids = await flood(g);
    // the kill must land inside the flood: some events of every task stored, and far from all
    await poll(
      () => {
        const stored = committed(g.view.stateDir);
        return ids.every((id) => (stored.get(id) ?? 0) >= 64);
      },
      60_000,
      "every task's first batch committed",
    );
    await readFirstPages(g, ids);
    await crash(first);
    const cut = committed(g.view.stateDir);
    const total = [...cut.values()].reduce((a, b) => a + b, 0);
    expect(total).toBeLessThan(EVENTS * ids.length);

    await g.start(1);
    expect(await violations(g, { id: `floodcrash${process.pid}`, generation: 1 })).toEqual({});
    // the restart added no provider event: what the crash left committed is what is stored
    expect(committed(g.view.stateDir)).toEqual(cut);
    for (const id of ids) {
      const t = await call(g.view.socketPath, "task.get", { task_id: id });
      const n = cut.get(id)!;
      // a task that got all its events out may have succeeded before the kill; every other one was interrupted
      if (t["status"] !== "succeeded") expect(t).toMatchObject({ status: "interrupted", error_code: "BRIDGE_RESTARTED" });
      else expect(n).toBe(EVENTS);
    }
  }, 120_000);
});
