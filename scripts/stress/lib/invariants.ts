/**
 * The invariants of docs/reliability.md, checked from outside the Bridge: the task list over RPC, the
 * state database opened read-only, the lock directory as the MCP role sees it, the fake provider's own
 * run log and `/proc`. Each broken invariant is one violation of a named kind (docs/reliability.md
 * "The stress grounds" lists them).
 */
import { Database } from "bun:sqlite";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { readGuard } from "../../../src/shared/leases/guard-files.ts";
import { DB_FILE } from "../../../src/shared/store/index.ts";
import { mcpView, type WriteEnv } from "../../../test/durability/support.ts";
import { call } from "../../../test/helpers/bridge.ts";
import { taggedProcesses } from "./generations.ts";
import type { Violations } from "./ground.ts";
import { eventKey, isTerminalStatus, type Ledger } from "./ledger.ts";

export interface StateView {
  socketPath: string;
  stateDir: string;
  lockDir: string;
  slots: number;
  runLog: string;
}

/** What the checks look at for a ground's `writeEnv` of `slots` workdirs (the fake's run log beside its state). */
export const viewOf = (w: WriteEnv, slots: number): StateView => ({
  socketPath: w.env.socketPath,
  stateDir: w.env.stateDir,
  lockDir: w.env.lockDir,
  slots,
  runLog: join(w.env.dir.path, "runs.log"),
});

interface Row {
  task_id: string;
  status: string;
  profile: string;
  workdir_slot: number;
  started_at: string | null;
  event_count: number;
  final_response: string | null;
  error_code: string | null;
}

interface StoredEvent {
  event_id: number;
  event_type: string;
  payload: Record<string, unknown>;
}

const TERMINAL_EVENT: Record<string, string> = {
  "task.completed": "succeeded",
  "task.failed": "failed",
  "task.interrupted": "interrupted",
  "task.cancelled": "cancelled",
};
const RECONCILE_SEQUENCE = ["runtime.reconcile_started", "runtime.reconcile_finished", "task.reconciled", "task.interrupted"];
const EVENT_LIMIT = 10_000;

/** Every task over RPC (`task.list`, page by page). */
async function listTasks(socketPath: string): Promise<Map<string, Record<string, unknown>>> {
  const out = new Map<string, Record<string, unknown>>();
  for (let before: string | null = null; ; ) {
    const page: { tasks: Record<string, unknown>[]; next_before_task_id: string | null } = await call(socketPath, "task.list", {
      limit: 500,
      before_task_id: before,
    });
    for (const t of page.tasks) out.set(String(t["task_id"]), t);
    if (page.next_before_task_id === null || page.tasks.length === 0) return out;
    before = page.next_before_task_id;
  }
}

/** The rows and every event, from the database opened read-only. */
function readDatabase(stateDir: string): { rows: Map<string, Row>; events: Map<string, StoredEvent[]> } {
  const db = new Database(join(stateDir, DB_FILE), { readonly: true });
  try {
    db.run("PRAGMA busy_timeout = 5000");
    const rows = new Map<string, Row>();
    for (const r of db.query<Row, []>("SELECT task_id, status, profile, workdir_slot, started_at, event_count, final_response, error_code FROM tasks").all()) {
      rows.set(r.task_id, r);
    }
    const events = new Map<string, StoredEvent[]>();
    for (const e of db
      .query<{ task_id: string; event_id: number; event_type: string; payload_json: string }, []>(
        "SELECT task_id, event_id, event_type, payload_json FROM events ORDER BY event_id",
      )
      .all()) {
      const list = events.get(e.task_id) ?? [];
      list.push({ event_id: e.event_id, event_type: e.event_type, payload: JSON.parse(e.payload_json) });
      events.set(e.task_id, list);
    }
    return { rows, events };
  } finally {
    db.close();
  }
}

/** The fake provider's run log: task id → how many run requests it took. */
function readRunLog(path: string): Map<string, number> {
  const runs = new Map<string, number>();
  if (!existsSync(path)) return runs;
  for (const line of readFileSync(path, "utf8").split("\n")) {
    const taskId = line.split(" ")[0];
    if (taskId) runs.set(taskId, (runs.get(taskId) ?? 0) + 1);
  }
  return runs;
}

export interface CheckOptions {
  /**
   * No task may be active, no finally path running, no lease held: right after a restart before anything
   * new is submitted, or once a ground's tasks all ended and their slots read free.
   */
  settled: boolean;
  /** With `settled`, no process of a generation below this one may be alive. */
  run?: { id: string; generation: number };
}

export interface CheckFigures {
  tasks: number;
  events: number;
  runs: number;
  guards: number;
  /** Tasks that startup reconciliation could not prove stopped (their last `task.reconciled`). */
  unproven_stops: number;
  /** "status error_code" → tasks. */
  statuses: Record<string, number>;
}

/** One full check of the state against the ledger; adds what it finds to `v`. */
export async function checkInvariants(view: StateView, ledger: Ledger, v: Violations, opts: CheckOptions): Promise<CheckFigures> {
  const listed = await listTasks(view.socketPath);
  const { rows, events } = readDatabase(view.stateDir);
  const runs = readRunLog(view.runLog);

  // an acknowledgement is a promise
  for (const [id, s] of ledger.tasks) {
    if (!listed.has(id)) v.add("acked_task_lost", `${id} (${s.prompt.slice(0, 24)}) answered by submit, missing from task.list`);
  }
  for (const [id, status] of ledger.terminal) {
    const now = listed.get(id)?.["status"];
    if (now !== undefined && now !== status) v.add("terminal_changed", `${id} read ${status}, now ${String(now)}`);
  }
  for (const [id, acked] of ledger.events) {
    const stored = new Map((events.get(id) ?? []).map((e) => [e.event_id, eventKey(e)]));
    for (const [eventId, key] of acked) {
      if (stored.get(eventId) !== key)
        v.add("acked_event_lost", `${id} event ${eventId} (${key.slice(0, 40)}) read once, now ${stored.get(eventId)?.slice(0, 40) ?? "absent"}`);
    }
  }

  // a task never runs twice
  for (const [id, n] of runs) {
    if (n > 1) v.add("ran_twice", `${id}: ${n} provider runs in the fake run log`);
    const row = rows.get(id);
    if (row === undefined) v.add("ran_unrecorded", `${id}: a provider run for a task with no row`);
    else if (row.started_at === null) v.add("ran_unrecorded", `${id}: a provider run while started_at is null`);
  }

  let unproven = 0;
  const statuses: Record<string, number> = {};
  for (const [id, row] of rows) {
    const end = row.error_code === null ? row.status : `${row.status} ${row.error_code}`;
    statuses[end] = (statuses[end] ?? 0) + 1;
    const list = events.get(id) ?? [];
    const types = list.map((e) => e.event_type);
    const started = types.filter((t) => t === "task.started").length;
    if (started > 1) v.add("ran_twice", `${id}: ${started} task.started events`);
    if (started === 1 && row.started_at === null) v.add("state_event_apart", `${id}: task.started without started_at`);
    if (row.event_count !== list.length) v.add("event_count_mismatch", `${id}: event_count ${row.event_count}, ${list.length} events`);
    if (list.some((e, i) => i > 0 && e.event_id <= list[i - 1]!.event_id)) v.add("event_order", `${id}: event ids not ascending`);

    const ends = types.filter((t) => t in TERMINAL_EVENT);
    if (isTerminalStatus(row.status)) {
      if (row.event_count < EVENT_LIMIT && (ends.length !== 1 || TERMINAL_EVENT[ends[0]!] !== row.status)) {
        v.add("state_event_apart", `${id}: ${row.status} with terminal events [${ends.join(",")}]`);
      }
    } else {
      if (ends.length > 0) v.add("state_event_apart", `${id}: ${row.status} with terminal events [${ends.join(",")}]`);
      if (opts.settled) v.add("still_active", `${id}: still ${row.status} where every task should have ended`);
    }
    // a startup reconciliation runs its sequence whole; a crash may cut it after its start, and the next start begins it again
    for (let i = types.indexOf(RECONCILE_SEQUENCE[0]!); i >= 0; i = types.indexOf(RECONCILE_SEQUENCE[0]!, i + 1)) {
      const seq = types.slice(i, i + RECONCILE_SEQUENCE.length);
      const cut = seq[1] === RECONCILE_SEQUENCE[0];
      if (!cut && seq.join() !== RECONCILE_SEQUENCE.join()) v.add("reconcile_order", `${id}: ${seq.join(",")}`);
    }
    const lastReconciled = list.findLast((e) => e.event_type === "task.reconciled");
    if (lastReconciled !== undefined && lastReconciled.payload["provider_active"] !== false) unproven++;

    const s = ledger.tasks.get(id);
    if (s !== undefined && row.status === "succeeded") {
      if (s.expectFinal !== null && row.final_response !== s.expectFinal) {
        v.add("wrong_result", `${id}: expected ${JSON.stringify(s.expectFinal.slice(0, 24))}, got ${JSON.stringify(row.final_response?.slice(0, 24))}`);
      }
    }
    if (s?.events != null) {
      const texts = list.filter((e) => e.event_type === "agent.message").map((e) => String(e.payload["text"]));
      const contiguous = texts.every((t, i) => t === `event ${i + 1}`);
      if (!contiguous) v.add("event_gap", `${id}: agent messages are not event 1..${texts.length} in order`);
      if (row.status === "succeeded" && texts.length !== s.events) v.add("event_gap", `${id}: succeeded with ${texts.length} of ${s.events} events`);
    }
  }

  // guards exactly where a stop was unproven; no lease outlives its holder
  let guards = 0;
  for (let slot = 1; slot <= view.slots; slot++) {
    const guard = readGuard(view.lockDir, slot);
    if (guard.kind !== "absent") guards++;
    if (guard.kind === "invalid") v.add("guard_invalid", `slot ${slot}: an invalid guard`);
    if (guard.kind === "valid") {
      const id = guard.guard.task_id;
      const row = rows.get(id);
      const last = (events.get(id) ?? []).findLast((e) => e.event_type === "task.reconciled");
      const unprovenStop = last !== undefined && last.payload["provider_active"] !== false;
      const live = row !== undefined && !isTerminalStatus(row.status);
      if (!unprovenStop && !(live && !opts.settled)) v.add("guard_left", `slot ${slot}: guard of ${id} (${row?.status ?? "no row"}) with no unproven stop`);
    }
    if (opts.settled) {
      const seen = mcpView(view.lockDir, slot);
      if (seen === "busy") v.add("lease_held", `slot ${slot}: the lease is held with no live task`);
    }
  }
  for (const [id, row] of rows) {
    if (row.profile !== "workspace-write" || !isTerminalStatus(row.status)) continue;
    const last = (events.get(id) ?? []).findLast((e) => e.event_type === "task.reconciled");
    if (last === undefined || last.payload["provider_active"] === false) continue;
    const guard = readGuard(view.lockDir, row.workdir_slot);
    if (guard.kind !== "valid" || guard.guard.task_id !== id) {
      v.add("guard_missing", `${id}: stop unproven (provider_active ${String(last.payload["provider_active"])}) but no guard on slot ${row.workdir_slot}`);
    }
  }

  // every orphan terminated
  if (opts.settled && opts.run !== undefined) {
    for (const p of taggedProcesses(opts.run.id)) {
      if (p.generation < opts.run.generation)
        v.add("orphan_alive", `pid ${p.pid} of generation ${p.generation} (${p.command}) alive in generation ${opts.run.generation}`);
    }
  }

  let runTotal = 0;
  for (const n of runs.values()) runTotal += n;
  let eventTotal = 0;
  for (const list of events.values()) eventTotal += list.length;
  return { tasks: rows.size, events: eventTotal, runs: runTotal, guards, unproven_stops: unproven, statuses };
}
