/**
 * The events table (docs/events.md#the-envelope to docs/events.md#appending): appending under the two limits, reading by cursor, and the
 * envelope a reader sees.
 *
 * Offers:
 * - `appendEvents(db, taskId, events, opts)`: one `BEGIN IMMEDIATE` transaction per batch (docs/events.md#appending).
 * - `insertEvents(db, taskId, events, opts)`: the same inside a caller's transaction (service events
 *   written together with a state change).
 * - `appendSerialized(db, taskId, types, jsons)` / `insertSerialized(…)`: the same for events whose
 *   payloads are already compact JSON (a provider batch from the provider worker).
 * - `listEvents(db, taskId, afterEventId, limit)`, `maxEventId(db, taskId)`, `latestEvent(db, taskId, type)`,
 *   `usagePayloads(db, taskId)`.
 * - `EventEnvelope`, `AppendResult`, `EventLimitCode`.
 *
 * Limits: a payload's compact JSON is at most `max_event_bytes` (else AGENT_EVENT_TOO_LARGE) and a task
 * holds at most `max_events_per_task` events, counted in `tasks.event_count`, updated in the same
 * transaction (else AGENT_EVENT_LIMIT_REACHED). Breaking a limit is a result, not an exception, so the
 * events before the breaking one stay committed.
 */
import type { Database } from "bun:sqlite";
import { ServerFsError } from "../errors.ts";
import { LIMITS } from "../limits.ts";
import { byteLength } from "../utf8.ts";
import type { EventInput, EventRow } from "./rows.ts";
import { isTerminal } from "./task-states.ts";
import { writeImmediate } from "./write.ts";

export type EventLimitCode = "AGENT_EVENT_TOO_LARGE" | "AGENT_EVENT_LIMIT_REACHED";

export interface AppendResult {
  /** How many of the given events were committed. */
  appended: number;
  /** The id of the last committed event, null when none was. */
  lastEventId: number | null;
  /** The limit the first dropped event broke; null when none was dropped for a limit. */
  broke: EventLimitCode | null;
  /** The whole batch was discarded because the task is terminal or gone. */
  discarded: boolean;
}

export interface AppendOptions {
  /** Reconciliation and operator events, and an accepted steering message's record, may be appended to a terminal task (docs/events.md#appending). */
  allowTerminal?: boolean;
}

export interface InsertOptions {
  allowTerminal: boolean;
  /**
   * `stop`: a provider batch keeps the events before the first breaking one and drops the rest.
   * `skip`: service events are each dropped on their own when they break a limit (the state change
   * they report still commits, docs/events.md#appending).
   */
  onLimit: "stop" | "skip";
}

export interface EventEnvelope {
  schema_version: 1;
  event_id: number;
  task_id: string;
  correlation_id: string | null;
  event_type: string;
  payload: Record<string, unknown>;
  created_at: string;
}

const nothing = (discarded: boolean): AppendResult => ({ appended: 0, lastEventId: null, broke: null, discarded });

export function insertEvents(db: Database, taskId: string, events: readonly EventInput[], opts: InsertOptions): AppendResult {
  const types = events.map((e) => e.type);
  const jsons = events.map((e) => JSON.stringify(e.payload));
  const ats = events.map((e) => e.at ?? null);
  return insertSerialized(db, taskId, types, jsons, ats, opts);
}

/** At most this many rows per INSERT statement: a provider batch (docs/events.md#appending) in one. */
const ROWS_PER_INSERT = 64;

/**
 * `INSERT … VALUES (?,?,?,?),(…)` for 1 to 64 rows, built once: `db.query` caches each size's
 * prepared statement by its text, which a constant string finds without building it per batch.
 */
const INSERT_SQL = Array.from(
  { length: ROWS_PER_INSERT + 1 },
  (_, n) => `INSERT INTO events (task_id, event_type, payload_json, created_at) VALUES ${Array.from({ length: n }, () => "(?, ?, ?, ?)").join(", ")}`,
);

/**
 * The events already serialized (a provider batch arrives so from the provider worker), `ats[i]` null
 * for "now". The rows that pass the limits go in multi-row INSERTs: one statement per 64 rows costs
 * less per row than one per row (docs/performance.md "## Bridge"). event_id is the INTEGER PRIMARY
 * KEY, so the last statement's rowid is the last event's id.
 */
export function insertSerialized(
  db: Database,
  taskId: string,
  types: readonly string[],
  jsons: readonly string[],
  ats: readonly (string | null)[] | null,
  opts: InsertOptions,
): AppendResult {
  const task = db.query<{ status: string; event_count: number }, [string]>("SELECT status, event_count FROM tasks WHERE task_id = ?").get(taskId);
  if (!task || (isTerminal(task.status) && !opts.allowTerminal)) return nothing(true);
  if (types.length === 0) return nothing(false);

  const now = new Date().toISOString();
  let count = task.event_count;
  let broke: EventLimitCode | null = null;
  const params: string[] = [];
  for (let i = 0; i < types.length; i++) {
    const json = jsons[i]!;
    const code: EventLimitCode | null =
      byteLength(json) > LIMITS.max_event_bytes ? "AGENT_EVENT_TOO_LARGE" : count >= LIMITS.max_events_per_task ? "AGENT_EVENT_LIMIT_REACHED" : null;
    if (code !== null) {
      broke ??= code;
      if (opts.onLimit === "stop") break;
      continue;
    }
    params.push(taskId, types[i]!, json, ats?.[i] ?? now);
    count++;
  }
  const appended = params.length / 4;
  let lastEventId: number | null = null;
  for (let row = 0; row < appended; row += ROWS_PER_INSERT) {
    const n = Math.min(ROWS_PER_INSERT, appended - row);
    const slice = row === 0 && n === appended ? params : params.slice(row * 4, (row + n) * 4);
    lastEventId = Number(db.query<never, string[]>(INSERT_SQL[n]!).run(...slice).lastInsertRowid);
  }
  if (appended > 0) db.query("UPDATE tasks SET event_count = ? WHERE task_id = ?").run(count, taskId);
  return { appended, lastEventId, broke, discarded: false };
}

export function appendEvents(db: Database, taskId: string, events: readonly EventInput[], opts: AppendOptions = {}): AppendResult {
  return writeImmediate(db, () => insertEvents(db, taskId, events, { allowTerminal: opts.allowTerminal ?? false, onLimit: "stop" }));
}

/** A provider batch, serialized by the provider worker: one `BEGIN IMMEDIATE` transaction (docs/events.md#appending). */
export function appendSerialized(db: Database, taskId: string, types: readonly string[], jsons: readonly string[]): AppendResult {
  return writeImmediate(db, () => insertSerialized(db, taskId, types, jsons, null, { allowTerminal: false, onLimit: "stop" }));
}

type EnvelopeRow = EventRow & { correlation_id: string | null };

const envelope = (r: EnvelopeRow): EventEnvelope => ({
  schema_version: 1,
  event_id: r.event_id,
  task_id: r.task_id,
  correlation_id: r.correlation_id,
  event_type: r.event_type,
  payload: JSON.parse(r.payload_json) as Record<string, unknown>,
  created_at: r.created_at,
});

const ENVELOPE_SELECT =
  "SELECT e.event_id, e.task_id, e.event_type, e.payload_json, e.created_at, t.correlation_id " + "FROM events e JOIN tasks t ON t.task_id = e.task_id";

/** The task's events after the exclusive cursor, ascending; `correlation_id` is the task's at read time. */
export function listEvents(db: Database, taskId: string, afterEventId: number, limit: number): EventEnvelope[] {
  if (!Number.isSafeInteger(afterEventId) || afterEventId < 0 || !Number.isSafeInteger(limit) || limit < 1 || limit > LIMITS.max_event_page) {
    throw new ServerFsError("INVALID_LIMIT", "after_event_id or limit is out of range");
  }
  return db
    .query<EnvelopeRow, [string, number, number]>(`${ENVELOPE_SELECT} WHERE e.task_id = ? AND e.event_id > ? ORDER BY e.event_id LIMIT ?`)
    .all(taskId, afterEventId, limit)
    .map(envelope);
}

/** The task's highest event id, 0 when it has none (the cursor value that skips nothing). */
export function maxEventId(db: Database, taskId: string): number {
  return db.query<{ m: number | null }, [string]>("SELECT MAX(event_id) AS m FROM events WHERE task_id = ?").get(taskId)?.m ?? 0;
}

/** The task's most recent event of one type (e.g. the last `task.reconciled` verdict), or null. */
export function latestEvent(db: Database, taskId: string, eventType: string): EventEnvelope | null {
  const row = db
    .query<EnvelopeRow, [string, string]>(`${ENVELOPE_SELECT} WHERE e.task_id = ? AND e.event_type = ? ORDER BY e.event_id DESC LIMIT 1`)
    .get(taskId, eventType);
  return row ? envelope(row) : null;
}

/** The payloads (compact JSON) of a task's `task.usage` events, in order: what its `usage` sums. */
export function usagePayloads(db: Database, taskId: string): string[] {
  return db
    .query<{ payload_json: string }, [string]>("SELECT payload_json FROM events WHERE task_id = ? AND event_type = 'task.usage' ORDER BY event_id")
    .all(taskId)
    .map((r) => r.payload_json);
}
