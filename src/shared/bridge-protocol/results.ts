/**
 * The result of every Bridge RPC method (docs/bridge-rpc.md#methods table and each method's section) as
 * one valibot object schema per method, the counterpart of `METHOD_PARAMS`: the Bridge's handlers
 * are typed by them and the client checks every answer against them, so the two ends cannot drift.
 * Offers:
 * - `METHOD_RESULTS`, and `Result<M>` (what a client gets) and `ResultInput<M>` (what a handler returns);
 * - the shared parts: `TaskSchema` (the task object), `EventEnvelopeSchema`, `RuntimeEntrySchema`,
 *   `GuardListingSchema`, and one type per result a caller names (`TaskObjectResult`, `TaskEvent`, ...).
 *
 * Every object is loose: protocol 1 may add result fields (docs/bridge-rpc.md#protocol-version), which
 * a client keeps and passes on without knowing them. To add a field, add it to its object here; the
 * Bridge's handler then has to return it (and the service function behind it, which names
 * `ResultInput<M>` as its return type, may return only the fields named here).
 * The order of the entries is the order a checked answer has (valibot rebuilds the object), and what
 * the MCP tools and `serverfs tasks --json` show: the task's and an event's bulk come last.
 */
import * as v from "valibot";
import { TASK_STATUSES } from "../store/task-states.ts";
import type { Method } from "./methods.ts";

const string = v.string();
const nullableString = v.nullable(v.string());
const integer = v.pipe(v.number(), v.integer());
const taskStatus = v.picklist(TASK_STATUSES);
/** A JSON object whose fields this protocol does not fix (an event's payload, the manifest). */
const openObject = v.looseObject({});

/** A model a task may ask for (docs/runtimes.md#models-effort-and-budget). */
export const ModelSchema = v.looseObject({
  model: string,
  efforts: v.array(string),
  default_effort: nullableString,
  is_default: v.boolean(),
});

/**
 * One `runtime.list` entry. A probe that throws gives only `name` and `available: false`, so the
 * rest is optional here; the MCP tool fills what is absent with null.
 */
export const RuntimeEntrySchema = v.looseObject({
  name: string,
  available: v.boolean(),
  version: v.optional(nullableString),
  persistent_session: v.optional(v.boolean()),
  live_steer: v.optional(v.boolean()),
  interactive_approval: v.optional(v.boolean()),
  interactive_question: v.optional(v.boolean()),
  in_flight_recovery: v.optional(v.picklist(["native", "session-resume", "none"])),
  /** null: the runtime is unavailable or did not list its models in time. */
  models: v.optional(v.nullable(v.array(ModelSchema))),
});

/** docs/task-model.md#human-in-the-loop-requests: a task's `pending_request`. */
export const PendingRequestSchema = v.looseObject({
  request_id: string,
  task_id: string,
  kind: v.picklist(["approval", "question"]),
  status: v.picklist(["pending", "resolved", "stale"]),
  payload: openObject,
  created_at: string,
  expires_at: nullableString,
  resolved_at: nullableString,
  resolution: v.nullable(openObject),
});

/** docs/task-model.md#the-task-object `usage` totals. */
const UsageTotals = v.looseObject({
  input_tokens: integer,
  cached_input_tokens: integer,
  output_tokens: integer,
  reasoning_output_tokens: integer,
  cost_usd: v.nullable(v.number()),
});

/** docs/task-model.md#the-task-object: what `task.get` answers and `task.list` lists. */
export const TaskSchema = v.looseObject({
  task_id: string,
  runtime: string,
  profile: string,
  workdir_alias: string,
  workdir_slot: v.pipe(integer, v.minValue(1), v.maxValue(16)),
  relative_cwd: string,
  status: taskStatus,
  created_at: string,
  updated_at: string,
  started_at: nullableString,
  completed_at: nullableString,
  deadline_at: nullableString,
  continue_from_task_id: nullableString,
  correlation_id: nullableString,
  idempotency_key: nullableString,
  final_response: nullableString,
  final_response_truncated: v.boolean(),
  result: v.looseObject({
    storage: v.picklist(["inline", "spool"]),
    size_bytes: v.nullable(integer),
    sha256: nullableString,
    retrievable: v.boolean(),
  }),
  manifest: v.nullable(openObject),
  manifest_sha256: nullableString,
  error_code: nullableString,
  error_message: nullableString,
  pending_request_id: nullableString,
  pending_request: v.nullable(PendingRequestSchema),
  usage: v.optional(v.nullable(v.looseObject({ by_model: v.array(v.looseObject({ model: nullableString, ...UsageTotals.entries })), total: UsageTotals }))),
  // who delegated it over OAuth (docs/task-model.md#the-task-object); optional like usage, for a Bridge from before it
  submitter: v.optional(v.nullable(v.looseObject({ sub: nullableString, client_id: nullableString }))),
});

/** docs/events.md#the-envelope: one event, its payload last. */
export const EventEnvelopeSchema = v.looseObject({
  schema_version: v.literal(1),
  event_id: integer,
  task_id: string,
  correlation_id: nullableString,
  event_type: string,
  created_at: string,
  payload: openObject,
});

/** One `recovery.list` entry: an invalid guard has every field but `slot` null. */
export const GuardListingSchema = v.looseObject({
  slot: integer,
  task_id: nullableString,
  runtime: nullableString,
  workdir_alias: nullableString,
  created_at: nullableString,
  /** null when the task row is gone (or there is no database). */
  task_status: nullableString,
  /** The payload of the task's latest `task.reconciled` event, or null. */
  last_verdict: v.nullable(openObject),
});

const counted = <T extends v.ObjectEntries>(entries: T) => v.array(v.looseObject({ ...entries, count: integer }));

/** docs/bridge-rpc.md#metricsread: the counts behind the console's `/metrics`, a snapshot per call. */
const MetricsSchema = v.looseObject({
  tasks: counted({ status: string, runtime: string }),
  pending_requests: counted({ kind: string }),
  events_appended: integer,
  guards: integer,
  provider_starts: counted({ runtime: string }),
  provider_failures: counted({ runtime: string, error_code: string }),
  recoveries: counted({ event: string }),
  approval_wait_seconds: v.looseObject({ buckets: v.array(v.looseObject({ le: v.number(), count: integer })), count: integer, sum: v.number() }),
});

const resolved = v.looseObject({ task_id: string, request_id: string, resolved: v.literal(true), correlation_id: nullableString });

export const METHOD_RESULTS = {
  "runtime.list": v.looseObject({ runtimes: v.array(RuntimeEntrySchema) }),
  "task.submit": v.looseObject({
    task_id: string,
    status: taskStatus,
    correlation_id: nullableString,
    idempotency_key: nullableString,
    // a Bridge of a release before `replayed` does not say: its task counts as a replay, so this
    // session is never made the submitter of a task it may not have created (docs/elicitation.md)
    replayed: v.optional(v.boolean(), true),
  }),
  "task.get": TaskSchema,
  "task.events": v.looseObject({
    correlation_id: nullableString,
    events: v.array(EventEnvelopeSchema),
    next_after_event_id: integer,
    // absent from a Bridge of a release before it: such a Bridge's forms cannot be watched (elicitation/withdrawal.ts)
    last_event_id: v.optional(integer),
  }),
  "task.result.read": v.looseObject({
    text: string,
    offset_bytes: integer,
    next_offset_bytes: integer,
    eof: v.boolean(),
    correlation_id: nullableString,
  }),
  "task.approval.respond": resolved,
  "task.question.answer": resolved,
  "task.message.send": v.looseObject({ task_id: string, accepted: v.literal(true), correlation_id: nullableString }),
  "task.cancel": v.looseObject({ task_id: string, status: taskStatus, correlation_id: nullableString }),
  "task.list": v.looseObject({ tasks: v.array(TaskSchema), next_before_task_id: nullableString }),
  "recovery.list": v.looseObject({ guards: v.array(GuardListingSchema) }),
  "recovery.clear": v.looseObject({ slot: integer, cleared: v.boolean(), task_id: nullableString }),
  "metrics.read": MetricsSchema,
} as const satisfies { [M in Method]: v.LooseObjectSchema<v.ObjectEntries, undefined> };

/**
 * The fields a schema names, without the index signature a loose object adds: what a handler must
 * return. (An interface such as the store's `TaskObject` has no index signature, so it could not
 * be given where one is required.)
 */
type Named<T> = T extends readonly (infer E)[] ? Named<E>[] : T extends object ? { [K in keyof T as string extends K ? never : K]: Named<T[K]> } : T;

/** What a client gets: the checked answer, with any field it does not know kept. */
export type Result<M extends Method> = v.InferOutput<(typeof METHOD_RESULTS)[M]>;
/** What the Bridge's handler for `M` returns. */
export type ResultInput<M extends Method> = Named<v.InferInput<(typeof METHOD_RESULTS)[M]>>;

export type TaskObjectResult = v.InferOutput<typeof TaskSchema>;
export type TaskEvent = v.InferOutput<typeof EventEnvelopeSchema>;
export type RuntimeEntry = v.InferOutput<typeof RuntimeEntrySchema>;
export type GuardListing = Named<v.InferOutput<typeof GuardListingSchema>>;
export type ClearResult = ResultInput<"recovery.clear">;
