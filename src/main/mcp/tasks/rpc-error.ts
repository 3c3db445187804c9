/**
 * How a failure leaves a tasks method or a task-augmented call (docs/mcp-tasks.md#errors): a JSON-RPC
 * error whose message is exactly `CODE: message`, as a tool error's text would be. The JSON-RPC code
 * is "invalid params" when the request named a task that does not exist or gave a bad argument
 * (what MCP prescribes for an unknown task id), "internal error" for everything else. An error that
 * already is a JSON-RPC one passes as it is.
 */
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
 * Bridge or any message sees it, never echoed. Its own class, so that tasks/cancel, which words every
 * other failure as "Failed to cancel task" (mcp-tasks.ts), passes it on as it is: -32602, exactly
 * `CODE: message`.
 */
export class NotATaskId extends Error {
  readonly code = INVALID_PARAMS;
  constructor() {
    super(new ServerFsError("AGENT_TASK_NOT_FOUND", "no task has this id (a task id is agt_ followed by 24 lowercase hex digits)").toText());
  }
}

export const notATaskId = (): NotATaskId => new NotATaskId();
