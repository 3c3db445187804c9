#!/usr/bin/env bun
/**
 * The provider-fault matrix (docs/reliability.md "The stress grounds"): one real `serverfs bridge`, and
 * per round every fault at once, each as a workspace-write `fake` task on a slot of its own — a crash,
 * a hang that ignores the interrupt and SIGTERM (cancelled), a line that is not JSON, a line over the
 * 64 MiB cap, a stderr flood, a child that outlives the leader in its group and one that leaves with
 * setsid, both ignoring SIGTERM (docs/runtimes.md#fake). For each: the task ends as documented, the
 * slot is free within the contract's stop bound for that fault, no process carrying its mark is left, the guard is gone; the
 * Bridge lives through all of it. Then the invariants of lib/invariants.ts. One JSON document; exit 1
 * on any violation.
 *
 *   bun run stress:faults [--rounds 3]
 */
import { readFileSync } from "node:fs";
import { DEFAULT_TERMINATE_BOUNDS, LEADER_WAIT_MS } from "../../src/shared/process-group.ts";
import { FAKE_RUN_LOG_VARIABLE } from "../../src/workers/fake-provider.ts";
import { aliasOf, mcpView, taskRow, writeEnv } from "../../test/durability/support.ts";
import { call, isTerminalTask, markedProcesses, rpc, startBridgeProcess, waitForTask } from "../../test/helpers/bridge.ts";
import { holdsWithin } from "../../test/helpers/poll.ts";
import { generationEnv, killGenerations, taggedProcesses } from "./lib/generations.ts";
import { finish, progress, sizeFlags, Violations } from "./lib/ground.ts";
import { checkInvariants, viewOf } from "./lib/invariants.ts";
import { Ledger } from "./lib/ledger.ts";

const flags = sizeFlags("provider-faults", { rounds: 3 });
const LINE_CAP = 64 * 1024 * 1024;
/**
 * The stop bounds are the contract's (docs/task-model.md#the-finally-path, #cancellation), read from the
 * module the Bridge stops providers with: a cancelled run gets the interrupt and `LEADER_WAIT_MS` for its
 * leader, then SIGKILL at once; a run that ended on its own, whose leader leaves when its input closes,
 * gets SIGTERM and the grace, then SIGKILL. Each is measured from the moment the stop began (the cancel's
 * answer, or the task read terminal), and `STOP_SLACK_MS` covers the SIGKILL taking effect, the `/proc`
 * check, the lease release and this script's polling on a loaded machine — less than either wait, so a
 * stop that waits twice (interrupt wait and a grace) is always over its bound.
 */
const STOP_SLACK_MS = 2_500;
const KILLED_AFTER_WAIT_MS = LEADER_WAIT_MS;
const KILLED_AFTER_GRACE_MS = DEFAULT_TERMINATE_BOUNDS.graceMs;
const NOTHING_LEFT_MS = 0;

interface Fault {
  fault: string;
  prompt: string;
  cancel?: boolean;
  status: string;
  errorCode: string | null;
  final?: string;
  /** What the contract lets the stop take, before `STOP_SLACK_MS`. */
  stopMs: number;
}

const FAULTS: Fault[] = [
  { fault: "crash", prompt: "crash:", status: "failed", errorCode: "AGENT_PROVIDER_ERROR", stopMs: NOTHING_LEFT_MS },
  { fault: "hang", prompt: "hang:", cancel: true, status: "cancelled", errorCode: null, stopMs: KILLED_AFTER_WAIT_MS },
  { fault: "garbage_line", prompt: "garbage:", status: "failed", errorCode: "AGENT_PROVIDER_ERROR", stopMs: NOTHING_LEFT_MS },
  { fault: "over_cap_line", prompt: `repeat:${LINE_CAP + 1}:x`, status: "failed", errorCode: "AGENT_PROVIDER_ERROR", stopMs: NOTHING_LEFT_MS },
  { fault: "stderr_flood", prompt: "stderr:64:flooded", status: "succeeded", errorCode: null, final: "flooded", stopMs: NOTHING_LEFT_MS },
  {
    fault: "child_outlives_leader",
    prompt: "linger:120:lingered",
    status: "succeeded",
    errorCode: null,
    final: "lingered",
    stopMs: KILLED_AFTER_GRACE_MS,
  },
  { fault: "child_setsid", prompt: "setsid:120:detached", status: "succeeded", errorCode: null, final: "detached", stopMs: KILLED_AFTER_GRACE_MS },
];

const say = (line: string) => progress("faults", line);
const run = `faults${process.pid}`;
const w = writeEnv(FAULTS.length, { lifecycle: { maintenance_interval_seconds: 1, max_active_tasks: FAULTS.length + 1 } });
const view = viewOf(w, FAULTS.length);
const ledger = new Ledger();
const v = new Violations();

interface Sample {
  endMs: number;
  freeMs: number;
  /** From the moment the stop began to the free slot. */
  stopMs: number;
}
const samples = new Map<string, Sample[]>(FAULTS.map((f) => [f.fault, []]));

async function one(f: Fault, slot: number, round: number): Promise<void> {
  const t0 = performance.now();
  const sub = await call<{ task_id: string }>(view.socketPath, "task.submit", {
    runtime: "fake",
    workdir: aliasOf(slot),
    path: "",
    profile: "workspace-write",
    prompt: f.prompt,
  });
  const id = sub.task_id;
  ledger.submitted({ taskId: id, prompt: f.prompt, profile: "workspace-write", slot, expectFinal: f.final ?? null, events: null });
  let stopFrom: number | null = null;
  if (f.cancel) {
    await waitForTask(view.socketPath, id, (t) => t["status"] === "running" || isTerminalTask(t));
    await rpc(view.socketPath, "task.cancel", { task_id: id });
    stopFrom = performance.now();
  }
  const t = await waitForTask(view.socketPath, id, isTerminalTask, 60_000);
  const endMs = performance.now() - t0;
  stopFrom ??= performance.now();
  ledger.sawTask(t);
  if (t["status"] !== f.status || t["error_code"] !== f.errorCode) {
    v.add("wrong_outcome", `${f.fault} (round ${round}): ${String(t["status"])} ${String(t["error_code"])}, expected ${f.status} ${f.errorCode}`);
  }
  const boundMs = f.stopMs + STOP_SLACK_MS;
  const free = await holdsWithin(() => mcpView(view.lockDir, slot) === "free", boundMs + 20_000);
  const freeMs = performance.now() - t0;
  const stopMs = performance.now() - stopFrom;
  if (!free) v.add("slot_not_freed", `${f.fault} (round ${round}): slot ${slot} reads ${mcpView(view.lockDir, slot)}`);
  else if (stopMs > boundMs) v.add("slow_stop", `${f.fault} (round ${round}): slot free ${Math.round(stopMs)} ms after the stop began (bound ${boundMs} ms)`);
  const mark = taskRow(view.stateDir, id)?.provider_mark;
  const left = mark ? markedProcesses(mark) : [];
  if (left.length > 0) v.add("orphan_alive", `${f.fault} (round ${round}): ${left.length} process(es) with the task's mark after its slot is free`);
  samples.get(f.fault)!.push({ endMs, freeMs, stopMs });
}

const started = performance.now();
const bridge = await startBridgeProcess(w.env, { ...generationEnv(run, 0), [FAKE_RUN_LOG_VARIABLE]: view.runLog });
let peakRssMb = 0;
const rssWatch = setInterval(() => {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${bridge.proc.pid}/status`, "utf8"));
    if (m) peakRssMb = Math.max(peakRssMb, Math.round(Number(m[1]) / 1024));
  } catch {
    // the Bridge has exited; the round's check says so
  }
}, 250);
let figures: Awaited<ReturnType<typeof checkInvariants>> | null = null;
try {
  for (let round = 1; round <= flags.rounds; round++) {
    await Promise.all(FAULTS.map((f, i) => one(f, i + 1, round)));
    if (bridge.proc.exitCode !== null || bridge.proc.signalCode !== null) {
      v.add("bridge_died", `exit ${bridge.proc.exitCode} ${bridge.proc.signalCode} in round ${round}`);
      break;
    }
    say(`round ${round}/${flags.rounds}: ${v.total} violations`);
  }
  if (bridge.proc.exitCode === null) {
    figures = await checkInvariants(view, ledger, v, { settled: true });
    for (const p of taggedProcesses(run)) if (p.pid !== bridge.proc.pid) v.add("orphan_alive", `pid ${p.pid} (${p.command}) with every task ended`);
    const code = await bridge.stop("SIGTERM");
    if (code !== 0) v.add("shutdown_failed", `SIGTERM exit ${code}`);
  }
} finally {
  clearInterval(rssWatch);
  killGenerations(run);
}
w.remove();
const round1 = (x: number) => Math.round(x);
finish(
  {
    ground: "provider-faults",
    rounds: flags.rounds,
    faults: Object.fromEntries(
      FAULTS.map((f) => {
        const s = samples.get(f.fault)!;
        return [
          f.fault,
          {
            expect: f.errorCode ? `${f.status} ${f.errorCode}` : f.status,
            runs: s.length,
            max_end_ms: round1(Math.max(0, ...s.map((x) => x.endMs))),
            max_slot_free_ms: round1(Math.max(0, ...s.map((x) => x.freeMs))),
            max_stop_ms: round1(Math.max(0, ...s.map((x) => x.stopMs))),
            stop_bound_ms: f.stopMs + STOP_SLACK_MS,
          },
        ];
      }),
    ),
    tasks: figures?.tasks ?? 0,
    provider_runs: figures?.runs ?? 0,
    final_statuses: figures?.statuses ?? {},
    bridge_peak_rss_mb: peakRssMb,
    duration_s: Math.round((performance.now() - started) / 100) / 10,
  },
  v,
);
