/**
 * How a failure leaves a tasks method or a task-augmented call (docs/mcp-tasks.md#errors): a JSON-RPC
 * error whose message is exactly `CODE: message`, as a tool error's text would be. The JSON-RPC code
 * is "invalid params" when the request named a task that does not exist or gave a bad argument
 * (what MCP prescribes for an unknown task id), "internal error" for everything else. An error that
 * already is a JSON-RPC one passes as it is.
 */
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { ServerFsError } from "../../../shared/errors.ts";

export const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;
const CALLERS_OWN: ReadonlySet<string> = new Set(["AGENT_TASK_NOT_FOUND", "INVALID_ARGUMENT"]);

export function rpcError(e: unknown): Error & { code: number } {
  if (e instanceof Error && typeof (e as { code?: unknown }).code === "number") return e as Error & { code: number };
  const err = e instanceof ServerFsError ? e : new ServerFsError("AGENT_BRIDGE_ERROR", "unexpected internal failure");
  return Object.assign(new Error(err.toText()), { code: CALLERS_OWN.has(err.code) ? INVALID_PARAMS : INTERNAL_ERROR });
}

/**
 * A task id that cannot name a task (not `agt_` + 24 hex, whatever its length): answered before the
 * Bridge or any message sees it, never echoed. An McpError, since the SDK's tasks/cancel handler passes
 * only those on as they are (anything else becomes -32600); its message is set back to `CODE: message`
 * without the "MCP error -32602: " its constructor puts before it.
 */
export function notATaskId(): McpError {
  const text = new ServerFsError("AGENT_TASK_NOT_FOUND", "no task has this id (a task id is agt_ followed by 24 lowercase hex digits)").toText();
  return Object.assign(new McpError(INVALID_PARAMS, text), { message: text });
}
