/**
 * The events table (docs/events.md#the-envelope to docs/events.md#appending): appending under the two limits, reading by cursor, and the
 * envelope a reader sees.
 *
 * Offers:
 * - `appendEvents(db, taskId, events, opts)`: one `BEGIN IMMEDIATE` transaction per batch (docs/events.md#appending).
 * - `insertEvents(db, taskId, events, opts)`: the same inside a caller's transaction (service events
 *   written together with a state change).
 * - `listEvents(db, taskId, afterEventId, limit)`, `maxEventId(db, taskId)`, `latestEvent(db, taskId, type)`.
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
  /** Reconciliation and operator events may be appended to a terminal task (docs/events.md#appending). */
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
  const task = db.query<{ status: string; event_count: number }, [string]>("SELECT status, event_count FROM tasks WHERE task_id = ?").get(taskId);
  if (!task || (isTerminal(task.status) && !opts.allowTerminal)) return nothing(true);
  if (events.length === 0) return nothing(false);

  // `run` and the rowid (event_id is the INTEGER PRIMARY KEY) rather than RETURNING: a row object per
  // event costs about a microsecond, an eighth of the provider worker's work per event
  const insert = db.query<never, [string, string, string, string]>("INSERT INTO events (task_id, event_type, payload_json, created_at) VALUES (?, ?, ?, ?)");
  const now = new Date().toISOString();
  let count = task.event_count;
  let appended = 0;
  let lastEventId: number | null = null;
  let broke: EventLimitCode | null = null;
  for (const e of events) {
    const json = JSON.stringify(e.payload);
    const code: EventLimitCode | null =
      byteLength(json) > LIMITS.max_event_bytes ? "AGENT_EVENT_TOO_LARGE" : count >= LIMITS.max_events_per_task ? "AGENT_EVENT_LIMIT_REACHED" : null;
    if (code !== null) {
      broke ??= code;
      if (opts.onLimit === "stop") break;
      continue;
    }
    lastEventId = Number(insert.run(taskId, e.type, json, e.at ?? now).lastInsertRowid);
    count++;
    appended++;
  }
  if (appended > 0) db.query("UPDATE tasks SET event_count = ? WHERE task_id = ?").run(count, taskId);
  return { appended, lastEventId, broke, discarded: false };
}

export function appendEvents(db: Database, taskId: string, events: readonly EventInput[], opts: AppendOptions = {}): AppendResult {
  return writeImmediate(db, () => insertEvents(db, taskId, events, { allowTerminal: opts.allowTerminal ?? false, onLimit: "stop" }));
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
