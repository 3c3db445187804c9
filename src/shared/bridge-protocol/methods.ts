/**
 * The params of every Bridge RPC method (docs/bridge-rpc.md#methods table, docs/bridge-rpc.md#parameter-rules rules) as one strict valibot
 * schema per method: key set and JSON types only. Range and semantic checks (limits, id formats,
 * enums) belong to the task service and use the methods' own codes. Offers:
 * - `METHOD_PARAMS`, `Method`, `METHODS`, `isMethod`;
 * - `Params<M>` (after defaults: what a handler receives) and `ParamsInput<M>` (what a client sends);
 * - one exported params type per method (`TaskSubmitParams`, ...).
 *
 * Encoding of docs/bridge-rpc.md#parameter-rules: a "string|null" param is `optional(nullable(string), null)` so null and absent
 * both arrive as null; other optional params are `optional(...)` (null is a type error); integers
 * are safe integers (booleans and strings are never numbers in valibot).
 */
import * as v from "valibot";
import { LIMITS } from "../limits.ts";

const string = v.string();
const integer = v.pipe(v.number(), v.safeInteger());
const stringOrNull = v.optional(v.nullable(v.string()), null);

/**
 * Who made a decision, for the Bridge's audit line (docs/bridge-rpc.md#actors): the MCP server's tools
 * (the default, so an MCP server that sends none is still `mcp`) or the operator's `serverfs tasks` and
 * console. A declaration by a peer the socket's peer check already admitted, not an authentication.
 */
export const ACTORS = ["mcp", "operator"] as const;
export type Actor = (typeof ACTORS)[number];
const actor = v.optional(v.picklist(ACTORS), "mcp");

export const METHOD_PARAMS = {
  "runtime.list": v.strictObject({}),
  "task.submit": v.strictObject({
    runtime: string,
    workdir: string,
    path: string,
    profile: string,
    prompt: string,
    continue_from_task_id: stringOrNull,
    correlation_id: stringOrNull,
    idempotency_key: stringOrNull,
    model: stringOrNull,
    effort: stringOrNull,
    max_budget_usd: v.optional(v.nullable(v.number()), null),
    // who delegated the task, when the MCP request carried an OAuth token (docs/bridge-rpc.md#tasksubmit)
    submitter: v.optional(v.nullable(v.strictObject({ sub: stringOrNull, client_id: stringOrNull })), null),
  }),
  "task.get": v.strictObject({ task_id: string }),
  "task.events": v.strictObject({
    task_id: string,
    after_event_id: v.optional(integer, 0),
    limit: v.optional(integer, LIMITS.default_page),
    wait_ms: v.optional(integer, 0),
  }),
  "task.result.read": v.strictObject({
    task_id: string,
    offset_bytes: v.optional(integer, 0),
    max_bytes: v.optional(integer, LIMITS.max_result_chunk_bytes),
  }),
  "task.approval.respond": v.strictObject({
    task_id: string,
    request_id: string,
    decision: string,
    granted_permission_ids: v.optional(v.array(string)),
    actor,
  }),
  // element shapes are INVALID_QUESTION_ANSWER territory (docs/bridge-rpc.md#taskapprovalrespond-and-taskquestionanswer step 7), not a protocol error
  "task.question.answer": v.strictObject({ task_id: string, request_id: string, answers: v.array(v.unknown()), actor }),
  "task.message.send": v.strictObject({ task_id: string, message: string }),
  "task.cancel": v.strictObject({ task_id: string, actor }),
  "task.list": v.strictObject({ status: stringOrNull, limit: v.optional(integer, LIMITS.default_page), before_task_id: stringOrNull }),
  "recovery.list": v.strictObject({}),
  "recovery.clear": v.strictObject({ slot: integer, confirm: v.boolean() }),
  "metrics.read": v.strictObject({}),
} as const;

export type Method = keyof typeof METHOD_PARAMS;
export const METHODS = Object.keys(METHOD_PARAMS) as Method[];

export function isMethod(name: string): name is Method {
  return Object.hasOwn(METHOD_PARAMS, name);
}

/** What a handler receives: key set and types checked, defaults applied, null optionals as null. */
export type Params<M extends Method> = v.InferOutput<(typeof METHOD_PARAMS)[M]>;
/** What a client may send. */
export type ParamsInput<M extends Method> = v.InferInput<(typeof METHOD_PARAMS)[M]>;
