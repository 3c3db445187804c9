/**
 * The row shapes the store reads and writes, one field per column of docs/task-model.md#the-state-database, and the
 * explicit column lists every SELECT uses (a migrated table has its columns in another order, so no
 * query relies on position or `*`).
 *
 * Offers: `TaskRow`, `NewTask`, `EventRow`, `EventInput`, `RequestRow`, `RequestKind`, `RequestStatus`,
 * `TASK_COLUMNS`, `REQUEST_COLUMNS`.
 */
import type { TaskStatus } from "./task-states.ts";

export type ResultStorage = "inline" | "spool";

export interface TaskRow {
  task_id: string;
  runtime: string;
  workdir_alias: string;
  workdir_slot: number;
  relative_cwd: string;
  profile: string;
  status: TaskStatus;
  created_at: string;
  started_at: string | null;
  updated_at: string;
  completed_at: string | null;
  deadline_at: string | null;
  continue_from_task_id: string | null;
  correlation_id: string | null;
  idempotency_key: string | null;
  submitter_sub: string | null;
  submitter_client_id: string | null;
  request_fingerprint: string | null;
  native_session_id: string | null;
  native_turn_id: string | null;
  provider_pgid: number | null;
  provider_start_time: number | null;
  provider_mark: string | null;
  final_response: string | null;
  result_storage: ResultStorage;
  result_size_bytes: number | null;
  result_sha256: string | null;
  manifest_json: string | null;
  manifest_sha256: string | null;
  error_code: string | null;
  error_message: string | null;
  pending_request_id: string | null;
  event_count: number;
}

/** The columns fixed when a task is submitted and never written again. */
export type SubmittedColumn =
  | "task_id"
  | "runtime"
  | "workdir_alias"
  | "workdir_slot"
  | "relative_cwd"
  | "profile"
  | "created_at"
  | "continue_from_task_id"
  | "correlation_id"
  | "idempotency_key"
  | "submitter_sub"
  | "submitter_client_id";

/** What a submission writes (docs/task-model.md#submission step 13.5); the rest starts null, `queued`, 0 or `inline`. */
export interface NewTask extends Pick<TaskRow, SubmittedColumn | "request_fingerprint"> {
  /** Never null for a new task (only a task migrated from v0.6 may lack these). */
  deadline_at: string;
  manifest_json: string;
  manifest_sha256: string;
}

export interface EventRow {
  event_id: number;
  task_id: string;
  event_type: string;
  payload_json: string;
  created_at: string;
}

/** One event to append; `at` defaults to the time of the append. */
export interface EventInput {
  type: string;
  payload: Record<string, unknown>;
  at?: string;
}

export type RequestKind = "approval" | "question";
export type RequestStatus = "pending" | "resolved" | "stale";

export interface RequestRow {
  request_id: string;
  task_id: string;
  kind: RequestKind;
  status: RequestStatus;
  payload_json: string;
  created_at: string;
  expires_at: string | null;
  resolved_at: string | null;
  resolution_json: string | null;
}

export const TASK_COLUMNS = (
  [
    "task_id",
    "runtime",
    "workdir_alias",
    "workdir_slot",
    "relative_cwd",
    "profile",
    "status",
    "created_at",
    "started_at",
    "updated_at",
    "completed_at",
    "deadline_at",
    "continue_from_task_id",
    "correlation_id",
    "idempotency_key",
    "submitter_sub",
    "submitter_client_id",
    "request_fingerprint",
    "native_session_id",
    "native_turn_id",
    "provider_pgid",
    "provider_start_time",
    "provider_mark",
    "final_response",
    "result_storage",
    "result_size_bytes",
    "result_sha256",
    "manifest_json",
    "manifest_sha256",
    "error_code",
    "error_message",
    "pending_request_id",
    "event_count",
  ] as const satisfies readonly (keyof TaskRow)[]
).join(", ");

export const REQUEST_COLUMNS = "request_id, task_id, kind, status, payload_json, created_at, expires_at, resolved_at, resolution_json";
