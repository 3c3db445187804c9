/**
 * Building and encoding response lines (docs/bridge-rpc.md#envelope): exactly `{request_id, ok, result}` or
 * `{request_id, ok: false, error: {code, message}}`, compact JSON plus LF. An encoded response
 * over `max_line_bytes` (limits.ts) becomes RESPONSE_TOO_LARGE with the same `request_id`; a result that
 * cannot be encoded at all is an internal failure. Offers `success`, `failure`, `encodeResponse`.
 */
import type { RpcResponse } from "../../../shared/bridge-protocol/envelope.ts";
import { byteSize } from "../../../shared/byte-size.ts";
import type { ErrorCode } from "../../../shared/errors.ts";
import { LIMITS } from "../../../shared/limits.ts";

export const success = (requestId: string, result: Record<string, unknown>): RpcResponse => ({
  request_id: requestId,
  ok: true,
  result,
});

export const failure = (requestId: string | null, code: ErrorCode, message: string): RpcResponse => ({
  request_id: requestId,
  ok: false,
  error: { code, message },
});

export const INTERNAL_FAILURE = "internal error";

function encodeLine(response: RpcResponse): Buffer {
  return Buffer.from(`${JSON.stringify(response)}\n`, "utf8");
}

export function encodeResponse(response: RpcResponse): Buffer {
  let line: Buffer;
  try {
    line = encodeLine(response);
  } catch {
    // BigInt or a cycle in a handler's result
    return encodeLine(failure(response.request_id, "BRIDGE_PROTOCOL_ERROR", INTERNAL_FAILURE));
  }
  if (line.length - 1 > LIMITS.max_line_bytes) {
    return encodeLine(failure(response.request_id, "RESPONSE_TOO_LARGE", `response is over ${byteSize(LIMITS.max_line_bytes)}`));
  }
  return line;
}
