#!/usr/bin/env bun
/**
 * The disk-full run (docs/reliability.md "The stress grounds"): a real `serverfs bridge` whose state and
 * lock directories are small tmpfs mounts. Each round starts write and review `fake` tasks, fills both
 * file systems to the last byte while they run and end, keeps submitting and reading for a while,
 * then frees the space. While full: the Bridge lives, every read answers, every refused write is
 * BRIDGE_STORAGE_ERROR (or the slot's fail-closed WORKDIR_RECOVERY_REQUIRED / WORKDIR_BUSY). Once
 * space is back, without a restart: every task ends, guards and leases are gone, a new write task
 * succeeds, and the invariants of lib/invariants.ts hold. Needs root for the mounts; elsewhere it
 * prints `{"skipped": true}` with a warning and exits 0.
 *
 *   bun run stress:disk [--rounds 5] [--tasks 6] [--full-ms 2000]
 */
import { rmSync } from "node:fs";
import { FAKE_RUN_LOG_VARIABLE } from "../../src/workers/fake-provider.ts";
import { aliasOf, mcpView, writeEnv } from "../../test/durability/support.ts";
import { type EventEnvelope, isTerminalTask, rpc, startBridgeProcess, waitForTask } from "../../test/helpers/bridge.ts";
import { holdsWithin } from "../../test/helpers/poll.ts";
import { fill, mountTmpfs, unmount } from "../../test/helpers/tmpfs.ts";
import { generationEnv, killGenerations, taggedProcesses } from "./lib/generations.ts";
import { finish, progress, seeded, sizeFlags, Violations } from "./lib/ground.ts";
import { checkInvariants, viewOf } from "./lib/invariants.ts";
import { Ledger } from "./lib/ledger.ts";

const flags = sizeFlags("disk-full", { rounds: 5, tasks: 6, "full-ms": 2000, seed: Date.now() % 1_000_000 });
const SLOTS = 3;
const REFUSED_WHILE_FULL = new Set(["BRIDGE_STORAGE_ERROR", "WORKDIR_RECOVERY_REQUIRED", "WORKDIR_BUSY", "AGENT_TASK_LIMIT_REACHED"]);
const ENDS = new Set(["succeeded", "cancelled", "failed BRIDGE_STORAGE_ERROR", "interrupted BRIDGE_STORAGE_ERROR", "failed AGENT_RESULT_STORAGE_ERROR"]);
const say = (line: string) => progress("disk", line);

const w = writeEnv(SLOTS, { lifecycle: { maintenance_interval_seconds: 1, max_active_tasks: 32 } });
const mounts = [w.env.stateDir, w.env.lockDir];
if (!(mountTmpfs(w.env.stateDir, "6m") && mountTmpfs(w.env.lockDir, "1m"))) {
  for (const m of mounts) unmount(m);
  w.remove();
  process.stderr.write("stress:disk: SKIPPED — mounting a tmpfs was refused (needs root)\n");
  process.stdout.write(`${JSON.stringify({ ground: "disk-full", skipped: true, reason: "mount refused" })}\n`);
  process.exit(0);
}

const r = seeded(flags.seed);
const run = `disk${process.pid}`;
const view = viewOf(w, SLOTS);
const ledger = new Ledger();
const v = new Violations();
const refusals = new Map<string, number>();
const recoveryMs: number[] = [];
let readsWhileFull = 0;
let counter = 0;

async function submit(profile: "review" | "workspace-write", slot: number, prompt: string, expectFinal: string | null, full: boolean): Promise<string | null> {
  const res = await rpc(view.socketPath, "task.submit", { runtime: "fake", workdir: aliasOf(slot), path: "", profile, prompt });
  if (res.ok) {
    const taskId = String(res.result!["task_id"]);
    ledger.submitted({ taskId, prompt, profile, slot, expectFinal, events: null });
    return taskId;
  }
  const code = res.error!.code;
  refusals.set(code, (refusals.get(code) ?? 0) + 1);
  if (!full || !REFUSED_WHILE_FULL.has(code)) v.add("wrong_refusal", `task.submit ${full ? "while full" : "with space"}: ${code}`);
  return null;
}

async function round(n: number, bridgeAlive: () => boolean): Promise<void> {
  // running before the disk fills, ending while it is full (or later)
  const ids: string[] = [];
  for (let i = 0; i < flags.tasks; i++) {
    const slot = (i % SLOTS) + 1;
    const write = i < SLOTS;
    const ms = r.int(200, flags["full-ms"] + 1000);
    const id = await submit(write ? "workspace-write" : "review", slot, `sleep:${ms}:d${counter}`, `d${counter++}`, false);
    if (id !== null) ids.push(id);
  }
  for (const id of ids) await waitForTask(view.socketPath, id, (t) => t["status"] !== "queued" && t["status"] !== "starting");

  const fillers = mounts.map(fill);
  const fullUntil = performance.now() + flags["full-ms"];
  while (performance.now() < fullUntil) {
    const id = await submit(r.pick(["review", "workspace-write"] as const), r.int(1, SLOTS), `events:${r.int(10, 100)}`, null, true);
    if (id !== null) ids.push(id);
    for (const t of ids) {
      const got = await rpc(view.socketPath, "task.get", { task_id: t });
      const events = await rpc(view.socketPath, "task.events", { task_id: t, limit: 500 });
      readsWhileFull += 2;
      if (!got.ok || !events.ok) v.add("read_refused", `while full: ${got.error?.code ?? events.error?.code}`);
      else ledger.sawEvents(t, (events.result as { events: EventEnvelope[] }).events);
    }
    if (!bridgeAlive()) return v.add("bridge_died", `round ${n}, while full`);
  }

  for (const f of fillers) rmSync(f);
  const freed = performance.now();
  for (const id of ids) {
    const t = await waitForTask(view.socketPath, id, isTerminalTask, 60_000).catch(() => null);
    if (t === null) {
      v.add("not_recovered", `round ${n}: ${id} not ended 60 s after space came back`);
      continue;
    }
    ledger.sawTask(t);
    const end = t["error_code"] === null ? String(t["status"]) : `${String(t["status"])} ${String(t["error_code"])}`;
    if (!ENDS.has(end)) v.add("wrong_outcome", `round ${n}: ${end}`);
  }
  for (let slot = 1; slot <= SLOTS; slot++) {
    if (!(await holdsWithin(() => mcpView(view.lockDir, slot) === "free", 30_000)))
      v.add("not_recovered", `round ${n}: slot ${slot} reads ${mcpView(view.lockDir, slot)}`);
  }
  recoveryMs.push(performance.now() - freed);
  const fresh = await submit("workspace-write", 1, `complete:fresh${n}`, `fresh${n}`, false);
  const done = fresh === null ? null : await waitForTask(view.socketPath, fresh, isTerminalTask, 30_000);
  if (done?.["status"] !== "succeeded") v.add("not_recovered", `round ${n}: a new write task ended ${String(done?.["status"])}`);
  // its finally path removes the guard after the terminal state is recorded
  if (!(await holdsWithin(() => mcpView(view.lockDir, 1) === "free", 30_000))) v.add("guard_left", `round ${n}: the new write task's guard stays`);
}

const started = performance.now();
const bridge = await startBridgeProcess(w.env, { ...generationEnv(run, 0), [FAKE_RUN_LOG_VARIABLE]: view.runLog });
const alive = () => bridge.proc.exitCode === null && bridge.proc.signalCode === null;
let figures: Awaited<ReturnType<typeof checkInvariants>> | null = null;
try {
  for (let n = 1; n <= flags.rounds && alive(); n++) {
    await round(n, alive);
    if (!alive()) break;
    figures = await checkInvariants(view, ledger, v, { settled: true });
    for (const p of taggedProcesses(run)) if (p.pid !== bridge.proc.pid) v.add("orphan_alive", `pid ${p.pid} (${p.command}) with every task ended`);
    say(`round ${n}/${flags.rounds}: ${v.total} violations`);
  }
  if (alive()) {
    const code = await bridge.stop("SIGTERM");
    if (code !== 0) v.add("shutdown_failed", `SIGTERM exit ${code}`);
  } else v.add("bridge_died", `exit ${bridge.proc.exitCode} ${bridge.proc.signalCode}`);
  if (bridge.stderr().includes(w.env.dir.path)) v.add("path_in_log", "the Bridge's log names a host path");
} finally {
  killGenerations(run);
  for (const m of mounts) unmount(m);
}
w.remove();
const max = (xs: number[]) => Math.round(Math.max(0, ...xs));
finish(
  {
    ground: "disk-full",
    seed: flags.seed,
    rounds: flags.rounds,
    full_ms: flags["full-ms"],
    tasks: figures?.tasks ?? 0,
    provider_runs: figures?.runs ?? 0,
    reads_while_full: readsWhileFull,
    events_acknowledged: ledger.ackedEvents,
    refusals: Object.fromEntries(refusals),
    final_statuses: figures?.statuses ?? {},
    recovery_ms_max: max(recoveryMs),
    duration_s: Math.round((performance.now() - started) / 100) / 10,
  },
  v,
);
