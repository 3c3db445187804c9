/**
 * Output shapes of the Agent tools (docs/mcp-tools.md#agent-tool-results). They validate the Bridge's answer — a
 * result that does not fit is AGENT_BRIDGE_PROTOCOL_ERROR — and they are the tools' declared output
 * schemas. Agent results may carry additive fields (loose objects), except the native identifiers,
 * which ServerFS strips before validating.
 */
import * as v from "valibot";

const nullableString = () => v.nullable(v.string());
const int = () => v.pipe(v.number(), v.integer());

/** A model a task may ask for (docs/runtimes.md#models-effort-and-budget). */
const ModelSchema = v.looseObject({
  model: v.string(),
  efforts: v.array(v.string()),
  default_effort: nullableString(),
  is_default: v.boolean(),
});

export const RuntimeInfoSchema = v.looseObject({
  name: v.string(),
  available: v.boolean(),
  version: nullableString(),
  persistent_session: v.nullable(v.boolean()),
  live_steer: v.nullable(v.boolean()),
  interactive_approval: v.nullable(v.boolean()),
  interactive_question: v.nullable(v.boolean()),
  in_flight_recovery: v.nullable(v.picklist(["native", "session-resume", "none"])),
  /** null: the runtime is unavailable or did not list its models in time. */
  models: v.nullable(v.array(ModelSchema)),
});

export const RuntimesResult = v.looseObject({ runtimes: v.array(RuntimeInfoSchema) });

export const SubmitResult = v.looseObject({
  task_id: v.string(),
  status: v.string(),
  correlation_id: nullableString(),
  idempotency_key: nullableString(),
});

/**
 * What `task.submit` answers: the tool's result, and whether the key's existing task was returned
 * (docs/bridge-rpc.md#idempotency). Only a task this call created makes the session its submitter
 * (docs/elicitation.md); a Bridge that does not say counts as a replay.
 */
export const BridgeSubmitted = v.looseObject({ ...SubmitResult.entries, replayed: v.optional(v.boolean(), true) });

/** docs/task-model.md#the-task-object `usage` totals. */
const UsageTotals = v.looseObject({
  input_tokens: int(),
  cached_input_tokens: int(),
  output_tokens: int(),
  reasoning_output_tokens: int(),
  cost_usd: v.nullable(v.number()),
});

const PendingRequest = v.looseObject({
  request_id: v.string(),
  task_id: v.string(),
  kind: v.picklist(["approval", "question"]),
  status: v.picklist(["pending", "resolved", "stale"]),
  payload: v.looseObject({}),
  created_at: v.string(),
  expires_at: nullableString(),
  resolved_at: nullableString(),
  resolution: v.nullable(v.looseObject({})),
});

export const TaskResult = v.looseObject({
  task_id: v.string(),
  runtime: v.string(),
  profile: v.string(),
  workdir_alias: v.string(),
  workdir_slot: v.pipe(int(), v.minValue(1), v.maxValue(16)),
  relative_cwd: v.string(),
  status: v.picklist(["queued", "starting", "running", "waiting_for_approval", "waiting_for_question", "succeeded", "failed", "cancelled", "interrupted"]),
  created_at: v.string(),
  updated_at: v.string(),
  started_at: nullableString(),
  completed_at: nullableString(),
  deadline_at: nullableString(),
  continue_from_task_id: nullableString(),
  correlation_id: nullableString(),
  idempotency_key: nullableString(),
  final_response: nullableString(),
  final_response_truncated: v.boolean(),
  result: v.looseObject({
    storage: v.picklist(["inline", "spool"]),
    size_bytes: v.nullable(int()),
    sha256: nullableString(),
    retrievable: v.boolean(),
  }),
  manifest: v.nullable(v.looseObject({})),
  manifest_sha256: nullableString(),
  error_code: nullableString(),
  error_message: nullableString(),
  pending_request_id: nullableString(),
  pending_request: v.nullable(PendingRequest),
  usage: v.optional(v.nullable(v.looseObject({ by_model: v.array(v.looseObject({ model: nullableString(), ...UsageTotals.entries })), total: UsageTotals }))),
});

/** Validation keeps these keys in this order: the payload, an event's bulk, last (docs/mcp-tools.md#results-and-errors). */
const EventEnvelope = v.looseObject({
  schema_version: v.literal(1),
  event_id: int(),
  task_id: v.string(),
  correlation_id: nullableString(),
  event_type: v.string(),
  created_at: v.string(),
  payload: v.looseObject({}),
});

export const EventsResult = v.looseObject({
  correlation_id: nullableString(),
  events: v.array(EventEnvelope),
  next_after_event_id: int(),
});

export const ResolvedResult = v.looseObject({
  task_id: v.string(),
  request_id: v.string(),
  resolved: v.literal(true),
  correlation_id: nullableString(),
});

export const MessageResult = v.looseObject({ task_id: v.string(), accepted: v.literal(true), correlation_id: nullableString() });

export const CancelResult = v.looseObject({ task_id: v.string(), status: v.string(), correlation_id: nullableString() });

export const ResultChunk = v.looseObject({
  text: v.string(),
  offset_bytes: int(),
  next_offset_bytes: int(),
  eof: v.boolean(),
  correlation_id: nullableString(),
});

const TASK_HIDDEN = ["native_session_id", "native_turn_id", "request_fingerprint"];
const EVENT_HIDDEN = new Set(["native_session_id", "native_turn_id", "thread_id", "turn_id"]);

/** docs/mcp-tools.md#redaction-and-identifiers: native identifiers never reach the client. */
export function stripTaskIds<T extends Record<string, unknown>>(task: T): T {
  const out: Record<string, unknown> = { ...task };
  for (const k of TASK_HIDDEN) delete out[k];
  return out as T;
}

export function stripEventIds(payload: unknown): unknown {
  if (Array.isArray(payload)) return payload.map(stripEventIds);
  if (typeof payload !== "object" || payload === null) return payload;
  const out: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(payload)) if (!EVENT_HIDDEN.has(k)) out[k] = stripEventIds(val);
  return out;
}
