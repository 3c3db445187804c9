#!/usr/bin/env bun
/**
 * The crash loop (docs/reliability.md "The stress grounds"): a real `serverfs bridge` runs mixed `fake`
 * tasks over several write slots while a client reads events and statuses, answers approvals and
 * cancels; at a random moment it is killed with SIGKILL; the next generation starts on the same state
 * and, before anything new is submitted, every invariant is checked (lib/invariants.ts). Some restarts
 * are preceded by a Bridge killed during its own startup reconciliation. Submits the
 * kill left unanswered are replayed with their idempotency key; one answered submit per cycle is
 * replayed too and must name the same task. Prints one JSON document; exits 1 on any violation.
 *
 *   bun run stress:crash [--cycles 100] [--tasks 6] [--slots 4] [--kill-ms 2500] [--seed N]
 */
import { FAKE_RUN_LOG_VARIABLE } from "../../src/workers/fake-provider.ts";
import { aliasOf, crash, writeEnv } from "../../test/durability/support.ts";
import { type BridgeProcess, type EventEnvelope, type RpcResponse, rpc, startBridgeProcess } from "../../test/helpers/bridge.ts";
import { spawnCli } from "../../test/helpers/process.ts";
import { generationEnv, killGenerations } from "./lib/generations.ts";
import { finish, progress, seeded, sizeFlags, Violations } from "./lib/ground.ts";
import { checkInvariants, viewOf } from "./lib/invariants.ts";
import { Ledger } from "./lib/ledger.ts";
import { randomTask, type TaskSpec } from "./lib/workload.ts";

const flags = sizeFlags("crash-loop", { cycles: 100, tasks: 6, slots: 4, "kill-ms": 2500, seed: Date.now() % 1_000_000 });
const EXPECTED_REFUSALS = new Set(["WORKDIR_BUSY", "AGENT_TASK_LIMIT_REACHED"]);
const say = (line: string) => progress("crash", line);

const r = seeded(flags.seed);
const run = `crash${process.pid}`;
const w = writeEnv(flags.slots, { lifecycle: { maintenance_interval_seconds: 1, max_active_tasks: 8 } });
const view = viewOf(w, flags.slots);
const ledger = new Ledger();
const v = new Violations();

interface Submit {
  spec: TaskSpec;
  slot: number;
  params: Record<string, unknown>;
}
/** Submits whose answer the kill took, to replay after the restart. */
let unanswered: Submit[] = [];
const answered: { submit: Submit; taskId: string }[] = [];
const refusals = new Map<string, number>();
const restartMs: number[] = [];
const killMs: number[] = [];
let counter = 0;
let acceptedSubmits = 0;
let replayedUnanswered = 0;

function newSubmit(): Submit {
  const spec = randomTask(r, counter++);
  const slot = r.int(1, flags.slots);
  return {
    spec,
    slot,
    params: { runtime: "fake", workdir: aliasOf(slot), path: "", profile: spec.profile, prompt: spec.prompt, idempotency_key: `${run}-${counter}` },
  };
}

function accepted(s: Submit, res: RpcResponse): void {
  const taskId = String(res.result!["task_id"]);
  acceptedSubmits++;
  answered.push({ submit: s, taskId });
  ledger.submitted({ taskId, prompt: s.spec.prompt, profile: s.spec.profile, slot: s.slot, expectFinal: s.spec.expectFinal, events: s.spec.events });
}

function refused(code: string, what: string): void {
  refusals.set(code, (refusals.get(code) ?? 0) + 1);
  if (!EXPECTED_REFUSALS.has(code)) v.add("submit_refused", `${what}: ${code}`);
}

/** One generation's client traffic until `killed()`. No answer after the kill is the kill's; before it, a violation. */
async function traffic(killed: () => boolean): Promise<void> {
  const mine: string[] = [];
  const cursors = new Map<string, number>();
  const cancels: Promise<unknown>[] = [];
  const ask = async (method: string, params: Record<string, unknown>): Promise<RpcResponse | null> => {
    let res: RpcResponse | undefined;
    let why = "no answer";
    try {
      res = await rpc(view.socketPath, method, params);
    } catch (e) {
      why = (e as Error).message;
    }
    if (res !== undefined) return res;
    if (!killed()) v.add("rpc_failed", `${method}: ${why}`);
    return null;
  };
  const submitter = (async () => {
    for (let i = 0; i < flags.tasks && !killed(); i++) {
      const s = newSubmit();
      const res = await ask("task.submit", s.params);
      if (res === null) unanswered.push(s);
      else if (!res.ok) refused(res.error!.code, "task.submit");
      else {
        accepted(s, res);
        const id = String(res.result!["task_id"]);
        mine.push(id);
        // one task in ten is cancelled a little later, from another connection
        if (r.next() < 0.1) cancels.push(Bun.sleep(r.int(0, 1500)).then(() => (killed() ? null : ask("task.cancel", { task_id: id }))));
      }
      await Bun.sleep(r.int(0, 300));
    }
  })();
  const reader = (async () => {
    while (!killed()) {
      if (mine.length === 0) {
        await Bun.sleep(20);
        continue;
      }
      const id = r.pick(mine);
      const page = await ask("task.events", { task_id: id, after_event_id: cursors.get(id) ?? 0, limit: 500 });
      if (page !== null && !page.ok) v.add("read_refused", `task.events: ${page.error!.code}`);
      if (page?.ok) {
        const { events, next_after_event_id } = page.result as { events: EventEnvelope[]; next_after_event_id: number };
        ledger.sawEvents(id, events);
        cursors.set(id, next_after_event_id);
      }
      const got = await ask("task.get", { task_id: id });
      if (got !== null && !got.ok) v.add("read_refused", `task.get: ${got.error!.code}`);
      if (got?.ok) {
        const t = got.result!;
        ledger.sawTask(t);
        const pending = t["pending_request"] as { request_id: string } | null;
        if (t["status"] === "waiting_for_approval" && pending && r.next() < 0.3) {
          await ask("task.approval.respond", { task_id: id, request_id: pending.request_id, decision: "approve_once" });
        }
      }
      await Bun.sleep(10);
    }
  })();
  await Promise.all([submitter, reader, ...cancels]);
}

/** After a restart: replays what the kill left unanswered, and one answered submit, which must name its task again. */
async function replay(): Promise<void> {
  const pending = unanswered;
  unanswered = [];
  for (const s of pending) {
    const res = await rpc(view.socketPath, "task.submit", s.params);
    replayedUnanswered++;
    if (res.ok) accepted(s, res);
    else refused(res.error!.code, "replayed task.submit");
  }
  if (answered.length > 0) {
    const { submit, taskId } = r.pick(answered);
    const res = await rpc(view.socketPath, "task.submit", submit.params);
    if (!res.ok) v.add("idempotency_lost", `replay of an answered submit: ${res.error!.code}`);
    else if (res.result!["task_id"] !== taskId) v.add("idempotency_lost", `replay named ${String(res.result!["task_id"])}, not ${taskId}`);
  }
}

const started = performance.now();
let bridge: BridgeProcess | null = null;
const totals = { tasks: 0, events: 0, runs: 0, unproven_stops: 0, guards_after_restart: 0, statuses: {} as Record<string, number> };
/** The share of restarts preceded by a Bridge killed during its own startup. */
const STARTUP_KILL_SHARE = 0.15;
let generation = 0;
let startupKills = 0;
try {
  for (let cycle = 0; cycle <= flags.cycles; cycle++) {
    const tag = () => ({ ...generationEnv(run, generation), [FAKE_RUN_LOG_VARIABLE]: view.runLog });
    if (cycle > 0 && r.next() < STARTUP_KILL_SHARE) {
      // a crash during startup itself: reconciliation cut short, to be done again by the next start
      const early = spawnCli(["bridge", "--config", w.env.configPath], { env: tag() });
      await Bun.sleep(r.int(0, 600));
      early.kill("SIGKILL");
      await early.exited;
      startupKills++;
      generation++;
    }
    const t0 = performance.now();
    bridge = await startBridgeProcess(w.env, tag());
    if (cycle > 0) {
      restartMs.push(performance.now() - t0);
      const figures = await checkInvariants(view, ledger, v, { settled: true, run: { id: run, generation } });
      Object.assign(totals, {
        tasks: figures.tasks,
        events: figures.events,
        runs: figures.runs,
        statuses: figures.statuses,
        unproven_stops: figures.unproven_stops,
      });
      totals.guards_after_restart += figures.guards;
      await replay();
    }
    if (cycle === flags.cycles) break;
    const at = r.int(0, flags["kill-ms"]);
    killMs.push(at);
    let killed = false;
    const load = traffic(() => killed);
    await Bun.sleep(at);
    killed = true;
    await crash(bridge);
    await load;
    generation++;
    if (cycle % 10 === 9) say(`cycle ${cycle + 1}/${flags.cycles}: ${ledger.tasks.size} tasks, ${v.total} violations`);
  }
  // a clean end: shutdown exits 0 and the invariants hold once more
  const code = await bridge!.stop("SIGTERM");
  if (code !== 0) v.add("shutdown_failed", `SIGTERM exit ${code}`);
} finally {
  killGenerations(run);
}
w.remove();
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const pct = (xs: number[], p: number) => (xs.length === 0 ? 0 : Math.round(sorted(xs)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!));
finish(
  {
    ground: "crash-loop",
    seed: flags.seed,
    cycles: flags.cycles,
    startup_kills: startupKills,
    slots: flags.slots,
    tasks_submitted: acceptedSubmits,
    tasks_in_database: totals.tasks,
    provider_runs: totals.runs,
    events_in_database: totals.events,
    events_acknowledged: ledger.ackedEvents,
    terminal_statuses_acknowledged: ledger.terminal.size,
    submits_replayed_after_kill: replayedUnanswered,
    refusals: Object.fromEntries(refusals),
    final_statuses: totals.statuses,
    unproven_stops: totals.unproven_stops,
    guards_after_restart: totals.guards_after_restart,
    kill_after_ms: { min: pct(killMs, 0), p50: pct(killMs, 0.5), max: pct(killMs, 1) },
    restart_ms: { p50: pct(restartMs, 0.5), p95: pct(restartMs, 0.95), max: pct(restartMs, 1) },
    duration_s: Math.round((performance.now() - started) / 100) / 10,
  },
  v,
);
