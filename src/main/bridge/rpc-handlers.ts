/**
 * The Bridge's method table (docs/bridge-rpc.md#methods): each RPC method, its params already checked for key set
 * and types by the protocol layer, mapped to one task-service call. Operator methods (`task.list`,
 * `recovery.*`) are additive in protocol 1; the MCP server never calls them.
 */
import type { TaskService } from "./service/task-service.ts";

type Params = Record<string, unknown>;
type Handler = (params: Params, ctx: { signal: AbortSignal }) => Promise<object> | object;

export function bridgeHandlers(service: TaskService): Record<string, Handler> {
  return {
    "runtime.list": () => service.runtimeList(),
    "task.submit": (p) => service.submit(p as never),
    "task.get": (p) => service.get(p["task_id"] as string),
    "task.events": (p, ctx) => service.events(p as never, ctx.signal),
    "task.result.read": (p) => service.readResult(p as never),
    "task.approval.respond": (p) => service.respondApproval(p as never),
    "task.question.answer": (p) => service.answerQuestion(p as never),
    "task.message.send": (p) => service.sendMessage(p as never),
    "task.cancel": (p) => service.cancel(p["task_id"] as string),
    "task.list": (p) => service.list(p as never),
    "recovery.list": () => service.recoveryList(),
    "recovery.clear": (p) => service.recoveryClear(p as never),
  };
}
