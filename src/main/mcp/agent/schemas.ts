/**
 * Output shapes of the Agent tools (docs/mcp-tools.md#agent-tool-results), the tools' declared output
 * schemas. Each is its Bridge method's result schema (bridge-protocol/results.ts), which the Bridge
 * client has already checked the answer against, less what the tool leaves out; only
 * `list_agent_runtimes` has a shape of its own (it fills what a failed probe leaves out). Agent
 * results may carry additive fields (loose objects), except the native identifiers, which ServerFS
 * strips.
 */
import * as v from "valibot";
import { METHOD_RESULTS, ModelSchema, TaskSchema } from "../../../shared/bridge-protocol/results.ts";

const nullableString = () => v.nullable(v.string());

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

/** `replayed` is for this side alone: only a task the call created makes the session its submitter (docs/elicitation.md). */
export const SubmitResult = v.omit(METHOD_RESULTS["task.submit"], ["replayed"]);

export const TaskResult = TaskSchema;

/** `last_event_id` is the Bridge's, for its own readers (the form watch); a client follows the cursor. */
export const EventsResult = v.omit(METHOD_RESULTS["task.events"], ["last_event_id"]);

export const ResolvedResult = METHOD_RESULTS["task.approval.respond"];

export const MessageResult = METHOD_RESULTS["task.message.send"];

export const CancelResult = METHOD_RESULTS["task.cancel"];

export const ResultChunk = METHOD_RESULTS["task.result.read"];

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
