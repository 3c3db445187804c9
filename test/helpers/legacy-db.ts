/**
 * Building a v0.6 Bridge database for migration tests: the schema of docs/task-model.md#the-state-database, verbatim, and
 * legacy rows written with exactly the columns a v0.6 Bridge had, in a fresh `state_dir` the test
 * then hands to a real v0.7 Bridge.
 */
import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

/** docs/task-model.md#the-state-database. */
export const V06_SCHEMA = `
CREATE TABLE tasks (
  task_id TEXT PRIMARY KEY, runtime TEXT NOT NULL, workdir_alias TEXT NOT NULL,
  workdir_slot INTEGER NOT NULL, relative_cwd TEXT NOT NULL, profile TEXT NOT NULL,
  status TEXT NOT NULL, created_at TEXT NOT NULL, started_at TEXT, updated_at TEXT NOT NULL,
  completed_at TEXT, continue_from_task_id TEXT, native_session_id TEXT, native_turn_id TEXT,
  final_response TEXT, error_code TEXT, error_message TEXT, pending_request_id TEXT);
CREATE TABLE events (
  event_id INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id TEXT NOT NULL REFERENCES tasks(task_id) ON DELETE CASCADE,
  event_type TEXT NOT NULL, payload_json TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE INDEX events_task_cursor ON events(task_id, event_id);
CREATE TABLE pending_requests (
  request_id TEXT PRIMARY KEY,
  task_id TEXT NOT NULL REFERENCES tasks(task_id) ON DELETE CASCADE,
  kind TEXT NOT NULL, status TEXT NOT NULL, payload_json TEXT NOT NULL, created_at TEXT NOT NULL,
  resolved_at TEXT, resolution_json TEXT);
CREATE INDEX pending_requests_task ON pending_requests(task_id, status);
`;

/** The `tasks` columns a v0.7 Bridge adds to a v0.6 database, in the order it adds them (docs/task-model.md#the-state-database). */
export const V07_NEW_TASK_COLUMNS = [
  "deadline_at",
  "correlation_id",
  "result_storage",
  "result_size_bytes",
  "result_sha256",
  "manifest_json",
  "manifest_sha256",
  "event_count",
  "idempotency_key",
  "request_fingerprint",
  "provider_pgid",
  "provider_start_time",
  "provider_mark",
];

/** A v0.6 task row; the columns v0.6 never had cannot be given. */
export interface LegacyTask {
  task_id: string;
  runtime?: string;
  workdir_alias?: string;
  workdir_slot?: number;
  relative_cwd?: string;
  profile?: string;
  status: string;
  created_at: string;
  started_at?: string | null;
  updated_at?: string;
  completed_at?: string | null;
  continue_from_task_id?: string | null;
  native_session_id?: string | null;
  native_turn_id?: string | null;
  final_response?: string | null;
  error_code?: string | null;
  error_message?: string | null;
  pending_request_id?: string | null;
}

export interface LegacyEvent {
  task_id: string;
  event_type: string;
  payload: Record<string, unknown>;
  created_at: string;
}

export interface LegacyRequest {
  request_id: string;
  task_id: string;
  kind: "approval" | "question";
  status: "pending" | "resolved" | "stale";
  payload: Record<string, unknown>;
  created_at: string;
  resolved_at?: string | null;
  resolution?: Record<string, unknown> | null;
}

export interface LegacyRows {
  tasks: LegacyTask[];
  events?: LegacyEvent[];
  requests?: LegacyRequest[];
}

/** A timestamp in a v0.6 form the fixed v0.7 form is not (no milliseconds), `hoursAgo` before now. */
export const legacyTimestamp = (hoursAgo: number): string => new Date(Date.now() - hoursAgo * 3_600_000).toISOString().replace(/\.\d{3}Z$/, "Z");

/** Creates `state_dir` (0700) with a v0.6 `state.sqlite3` holding `rows`; returns the database path. */
export function createLegacyDb(stateDir: string, rows: LegacyRows): string {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const path = join(stateDir, "state.sqlite3");
  const db = new Database(path, { create: true });
  try {
    db.exec(V06_SCHEMA);
    const insertTask = db.query(
      `INSERT INTO tasks (task_id, runtime, workdir_alias, workdir_slot, relative_cwd, profile, status, created_at,
         started_at, updated_at, completed_at, continue_from_task_id, native_session_id, native_turn_id,
         final_response, error_code, error_message, pending_request_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const insertEvent = db.query("INSERT INTO events (task_id, event_type, payload_json, created_at) VALUES (?, ?, ?, ?)");
    const insertRequest = db.query(
      `INSERT INTO pending_requests (request_id, task_id, kind, status, payload_json, created_at, resolved_at, resolution_json)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    db.transaction(() => {
      for (const t of rows.tasks) {
        insertTask.run(
          t.task_id,
          t.runtime ?? "fake",
          t.workdir_alias ?? "repo",
          t.workdir_slot ?? 1,
          t.relative_cwd ?? "",
          t.profile ?? "review",
          t.status,
          t.created_at,
          t.started_at ?? null,
          t.updated_at ?? t.created_at,
          t.completed_at ?? null,
          t.continue_from_task_id ?? null,
          t.native_session_id ?? null,
          t.native_turn_id ?? null,
          t.final_response ?? null,
          t.error_code ?? null,
          t.error_message ?? null,
          t.pending_request_id ?? null,
        );
      }
      for (const e of rows.events ?? []) insertEvent.run(e.task_id, e.event_type, JSON.stringify(e.payload), e.created_at);
      for (const r of rows.requests ?? []) {
        insertRequest.run(
          r.request_id,
          r.task_id,
          r.kind,
          r.status,
          JSON.stringify(r.payload),
          r.created_at,
          r.resolved_at ?? null,
          r.resolution ? JSON.stringify(r.resolution) : null,
        );
      }
    })();
  } finally {
    db.close();
  }
  return path;
}
