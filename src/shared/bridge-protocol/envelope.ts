/**
 * The Bridge RPC envelope, protocol 1 (docs/bridge-rpc.md#socket-and-framing, #envelope), shared by the Bridge's server and the
 * MCP role's client. Offers:
 * - `PROTOCOL_VERSION` (the line limit is `max_line_bytes` in limits.ts);
 * - `RequestEnvelopeSchema` / `RequestEnvelope`: the four top-level keys and their JSON types;
 * - `SuccessResponseSchema`, `ErrorResponseSchema`, `ErrorBodySchema` and their types: the two
 *   response shapes, exactly three keys each;
 * - `isJsonObject`: "a JSON object" as the protocol means it (not null, not an array).
 */
import * as v from "valibot";
import { ERROR_CODE_PATTERN } from "../errors.ts";

export const PROTOCOL_VERSION = 1;

export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const jsonObject = v.custom<Record<string, unknown>>(isJsonObject);

/**
 * Key set and JSON types of a request. `protocol_version` only has to be a safe integer here:
 * its value is checked after the key set, with its own code (validation order).
 */
export const RequestEnvelopeSchema = v.strictObject({
  protocol_version: v.pipe(v.number(), v.safeInteger()),
  request_id: v.pipe(v.string(), v.nonEmpty()),
  method: v.string(),
  params: jsonObject,
});
export type RequestEnvelope = v.InferOutput<typeof RequestEnvelopeSchema>;

export const ErrorBodySchema = v.strictObject({
  code: v.pipe(v.string(), v.regex(ERROR_CODE_PATTERN)),
  message: v.string(),
});

export const SuccessResponseSchema = v.strictObject({
  request_id: v.pipe(v.string(), v.nonEmpty()),
  ok: v.literal(true),
  result: jsonObject,
});
export type SuccessResponse = v.InferOutput<typeof SuccessResponseSchema>;

/** `request_id` is null when the line gave no usable id (docs/bridge-rpc.md#envelope). */
export const ErrorResponseSchema = v.strictObject({
  request_id: v.nullable(v.pipe(v.string(), v.nonEmpty())),
  ok: v.literal(false),
  error: ErrorBodySchema,
});
export type ErrorResponse = v.InferOutput<typeof ErrorResponseSchema>;

export type RpcResponse = SuccessResponse | ErrorResponse;
