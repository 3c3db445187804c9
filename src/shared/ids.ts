/**
 * Identifiers the Bridge generates (docs/task-model.md#conventions), all from the cryptographic RNG, usable on any
 * thread. Offers:
 * - `newTaskId()` `agt_` + 24 hex, `newRequestId()` `req_` + 24 hex (96 bits each);
 * - `newRpcRequestId()` `mcp_` + 24 hex, the MCP role's RPC envelope id;
 * - `newMark()` 32 hex, the provider mark written before a provider is spawned;
 * - `random16Hex()` 16 hex, the random part of temporary file names;
 * - `isTaskId(v)` / `isRequestId(v)`: callers treat a non-matching id as unknown, never as a syntax error.
 */
import { randomBytes } from "node:crypto";

export const TASK_ID_PATTERN = /^agt_[0-9a-f]{24}$/;
export const REQUEST_ID_PATTERN = /^req_[0-9a-f]{24}$/;

/** `bytes` random bytes as lowercase hex (two digits per byte). */
const randomHex = (bytes: number): string => randomBytes(bytes).toString("hex");

export const newTaskId = (): string => `agt_${randomHex(12)}`;
export const newRequestId = (): string => `req_${randomHex(12)}`;
export const newRpcRequestId = (): string => `mcp_${randomHex(12)}`;
export const newMark = (): string => randomHex(16);
export const random16Hex = (): string => randomHex(8);

export const isTaskId = (v: unknown): v is string => typeof v === "string" && TASK_ID_PATTERN.test(v);
export const isRequestId = (v: unknown): v is string => typeof v === "string" && REQUEST_ID_PATTERN.test(v);
