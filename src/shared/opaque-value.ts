/**
 * `correlation_id` and `idempotency_key`, checked by the same rule on both sides
 * (docs/bridge-rpc.md#limits, docs/mcp-tools.md#mcp-side-checks): "" is the same as absent (null);
 * otherwise at most `max_opaque_bytes` (limits.ts) UTF-8 bytes without control characters. Each
 * side refuses with its own code: INVALID_REQUEST at the Bridge, INVALID_ARGUMENT at the MCP server.
 */
import { type ErrorCode, ServerFsError } from "./errors.ts";
import { LIMITS } from "./limits.ts";
import { byteLength } from "./utf8.ts";

const CONTROL = /[\u0000-\u001f\u007f]/;

export function opaqueValue(value: string | null | undefined, name: string, code: ErrorCode & ("INVALID_REQUEST" | "INVALID_ARGUMENT")): string | null {
  if (value === undefined || value === null || value === "") return null;
  if (byteLength(value) > LIMITS.max_opaque_bytes || CONTROL.test(value)) {
    throw new ServerFsError(code, `${name} must be at most ${LIMITS.max_opaque_bytes} bytes without control characters`);
  }
  return value;
}
