/**
 * The JSON-lines wire between the fake adapter and the fake provider process, one valibot schema per
 * direction (the single source of validation and types for both ends).
 *
 * Provider → adapter (`ProviderLine`): `ready` (handshake, first line, before any task input),
 * `session` (native ids), `agent_message`, `approval_request {id, command, file_change?}`, `question_request {id,
 * prompt}`, `message_ack {id}`, then exactly one of `final {text}`, `failed {code, message}`,
 * `cancelled`.
 * Adapter → provider (`AdapterLine`): `run` (the task input, once), `approval_response {id, decision}`,
 * `question_response {id, answers | null}` (null: no answer will come), `message {id, text}`,
 * `interrupt`.
 *
 * The provider speaks in its own terms (a command, a question prompt); the adapter turns them into the
 * Bridge's normalized payloads, as the codex and claude adapters do with theirs.
 */
import * as v from "valibot";
import { DECISIONS } from "../../shared/hitl-validation.ts";
import type { JsonLine } from "./line-reader.ts";

export const FAKE_WIRE_PROTOCOL = 1;

const id = v.pipe(v.number(), v.integer(), v.minValue(0));

const AnswerSchema = v.strictObject({
  question_id: v.string(),
  selected_option_ids: v.array(v.string()),
  text: v.optional(v.string()),
});

export const AdapterLineSchema = v.variant("type", [
  v.strictObject({
    type: v.literal("run"),
    task_id: v.string(),
    prompt: v.string(),
    cwd: v.string(),
    profile: v.picklist(["review", "workspace-write"]),
    continue_session_id: v.nullable(v.string()),
  }),
  v.strictObject({ type: v.literal("approval_response"), id, decision: v.picklist(DECISIONS) }),
  v.strictObject({ type: v.literal("question_response"), id, answers: v.nullable(v.array(AnswerSchema)) }),
  v.strictObject({ type: v.literal("message"), id, text: v.string() }),
  v.strictObject({ type: v.literal("interrupt") }),
]);

export const ProviderLineSchema = v.variant("type", [
  v.strictObject({ type: v.literal("ready"), protocol: v.literal(FAKE_WIRE_PROTOCOL) }),
  v.strictObject({ type: v.literal("session"), session_id: v.string(), turn_id: v.string() }),
  v.strictObject({ type: v.literal("agent_message"), text: v.string() }),
  v.strictObject({
    type: v.literal("approval_request"),
    id,
    command: v.string(),
    // present: the request is to write this text at this path (a file-change approval), not to run `command`
    file_change: v.optional(v.strictObject({ path: v.string(), text: v.string() })),
  }),
  v.strictObject({ type: v.literal("question_request"), id, prompt: v.string() }),
  v.strictObject({ type: v.literal("message_ack"), id }),
  v.strictObject({ type: v.literal("final"), text: v.string() }),
  v.strictObject({
    type: v.literal("failed"),
    code: v.picklist(["AGENT_PROVIDER_ERROR", "AGENT_SESSION_NOT_RESUMABLE"]),
    message: v.string(),
  }),
  v.strictObject({ type: v.literal("cancelled") }),
]);

export type AdapterLine = v.InferOutput<typeof AdapterLineSchema>;
export type ProviderLine = v.InferOutput<typeof ProviderLineSchema>;
export type RunRequest = Extract<AdapterLine, { type: "run" }>;

/** Checks one parsed wire line against `schema`; null when it was not JSON or does not fit. */
export function parseLine<T extends v.GenericSchema>(schema: T, line: JsonLine): v.InferOutput<T> | null {
  const r = v.safeParse(schema, line);
  return r.success ? r.output : null;
}
