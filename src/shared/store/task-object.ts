/**
 * The task object of docs/task-model.md#the-task-object (what `task.get` and `task.list` return) and the request object of
 * docs/task-model.md#human-in-the-loop-requests, built from rows. Pure mapping, no SQL.
 *
 * Offers: `taskObject(row, pendingRequest, usagePayloads)`, `requestObject(row)`, `usageObject(payloads)`,
 * `TaskObject`, `RequestObject`, `ResultObject`, `TaskUsage`, `UsageTotals`.
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
  /** What the run used, summed from its `task.usage` events; null when the runtime reported none. */
  usage: TaskUsage | null;
  /** Whom the submitting MCP request's OAuth token named; null without one (docs/task-model.md#the-task-object). */
  submitter: { sub: string | null; client_id: string | null } | null;
}

/** Token counts (cached input within input, reasoning within output) and cost, where reported. */
export interface UsageTotals {
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
  reasoning_output_tokens: number;
  /** USD as the runtime priced it; null when it reported no cost (Codex). */
  cost_usd: number | null;
}

export interface TaskUsage {
  by_model: (UsageTotals & { model: string | null })[];
  total: UsageTotals;
}

const TOKEN_KEYS = ["input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens"] as const;

const count = (x: unknown): number => (typeof x === "number" && Number.isSafeInteger(x) && x >= 0 ? x : 0);

/** Adds a cost, kept to a millionth of a dollar so float sums do not drift; anything not a cost is skipped. */
const addCost = (a: number | null, b: unknown): number | null =>
  typeof b === "number" && Number.isFinite(b) && b >= 0 ? Math.round(((a ?? 0) + b) * 1e6) / 1e6 : a;

function addUsage(to: UsageTotals, p: Record<string, unknown>): void {
  for (const k of TOKEN_KEYS) to[k] += count(p[k]);
  to.cost_usd = addCost(to.cost_usd, p["cost_usd"]);
}

const zero = (): UsageTotals => ({ input_tokens: 0, cached_input_tokens: 0, output_tokens: 0, reasoning_output_tokens: 0, cost_usd: null });

/** The `usage` of docs/task-model.md#the-task-object from the task's `task.usage` payloads. */
export function usageObject(payloads: readonly string[]): TaskUsage | null {
  if (payloads.length === 0) return null;
  const byModel = new Map<string | null, UsageTotals & { model: string | null }>();
  const total = zero();
  for (const json of payloads) {
    const p = JSON.parse(json) as Record<string, unknown>;
    const model = typeof p["model"] === "string" ? p["model"] : null;
    const entry = byModel.get(model) ?? { model, ...zero() };
    byModel.set(model, entry);
    addUsage(entry, p);
    addUsage(total, p);
  }
  return { by_model: [...byModel.values()], total };
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

/**
 * `pendingRequest` is the row `pending_request_id` names (ignored when that is null); `usagePayloads`
 * the task's `task.usage` payloads.
 */
export function taskObject(t: TaskRow, pendingRequest: RequestRow | null, usagePayloads: readonly string[] = []): TaskObject {
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
    usage: usageObject(usagePayloads),
    submitter: t.submitter_sub === null && t.submitter_client_id === null ? null : { sub: t.submitter_sub, client_id: t.submitter_client_id },
  };
}
