/**
 * The task object of docs/task-model.md#the-task-object (what `task.get` and `task.list` return) and the request object of
 * docs/task-model.md#human-in-the-loop-requests, built from rows. Pure mapping, no SQL.
 *
 * Offers: `taskObject(row, pendingRequest)`, `requestObject(row)`, `TaskObject`, `RequestObject`,
 * `ResultObject`.
 *
 * Never returned (docs/task-model.md#the-task-object): native session/turn ids, provider_pgid, provider_start_time, provider_mark,
 * request_fingerprint, event_count; the prompt is never stored at all. The mapper names each field it
 * returns, so a new column can never leak by accident.
 */
import type { Manifest } from "../manifest.ts";
import type { RequestKind, RequestRow, RequestStatus, ResultStorage, SubmittedColumn, TaskRow } from "./rows.ts";

export interface ResultObject {
  storage: ResultStorage;
  size_bytes: number | null;
  sha256: string | null;
  retrievable: boolean;
}

export interface RequestObject {
  request_id: string;
  task_id: string;
  kind: RequestKind;
  status: RequestStatus;
  payload: Record<string, unknown>;
  created_at: string;
  expires_at: string | null;
  resolved_at: string | null;
  resolution: Record<string, unknown> | null;
}

/** The row's columns a reader may see, and what the mapper derives from the others. */
export interface TaskObject
  extends Pick<
    TaskRow,
    | Exclude<SubmittedColumn, "submitter_sub" | "submitter_client_id">
    | "status"
    | "updated_at"
    | "started_at"
    | "completed_at"
    | "deadline_at"
    | "final_response"
    | "manifest_sha256"
    | "error_code"
    | "error_message"
    | "pending_request_id"
  > {
  final_response_truncated: boolean;
  result: ResultObject;
  manifest: Manifest | null;
  pending_request: RequestObject | null;
  /** Whom the submitting MCP request's OAuth token named; null without one (docs/task-model.md#the-task-object). */
  submitter: { sub: string | null; client_id: string | null } | null;
}

export function requestObject(r: RequestRow): RequestObject {
  return {
    request_id: r.request_id,
    task_id: r.task_id,
    kind: r.kind,
    status: r.status,
    payload: JSON.parse(r.payload_json) as Record<string, unknown>,
    created_at: r.created_at,
    expires_at: r.expires_at,
    resolved_at: r.resolved_at,
    resolution: r.resolution_json === null ? null : (JSON.parse(r.resolution_json) as Record<string, unknown>),
  };
}

/** `pendingRequest` is the row `pending_request_id` names (ignored when that is null). */
export function taskObject(t: TaskRow, pendingRequest: RequestRow | null): TaskObject {
  const spooled = t.result_storage === "spool";
  return {
    task_id: t.task_id,
    runtime: t.runtime,
    workdir_alias: t.workdir_alias,
    workdir_slot: t.workdir_slot,
    relative_cwd: t.relative_cwd,
    profile: t.profile,
    status: t.status,
    created_at: t.created_at,
    updated_at: t.updated_at,
    started_at: t.started_at,
    completed_at: t.completed_at,
    deadline_at: t.deadline_at,
    continue_from_task_id: t.continue_from_task_id,
    correlation_id: t.correlation_id,
    idempotency_key: t.idempotency_key,
    final_response: t.final_response,
    final_response_truncated: spooled,
    result: { storage: t.result_storage, size_bytes: t.result_size_bytes, sha256: t.result_sha256, retrievable: spooled },
    manifest: t.manifest_json === null ? null : (JSON.parse(t.manifest_json) as Manifest),
    manifest_sha256: t.manifest_sha256,
    error_code: t.error_code,
    error_message: t.error_message,
    pending_request_id: t.pending_request_id,
    pending_request: t.pending_request_id !== null && pendingRequest?.request_id === t.pending_request_id ? requestObject(pendingRequest) : null,
    submitter: t.submitter_sub === null && t.submitter_client_id === null ? null : { sub: t.submitter_sub, client_id: t.submitter_client_id },
  };
}
