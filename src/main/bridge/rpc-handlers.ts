/**
 * The Bridge's method table (docs/bridge-rpc.md#methods): each RPC method mapped to one task-service
 * call. Every handler's params are typed by its method's schema in METHOD_PARAMS, which the
 * dispatcher has already checked them against, and the service method takes that same type.
 * Operator methods (`task.list`, `recovery.*`, `metrics.read`) are additive in protocol 1; the MCP server never
 * calls them.
 */
import type { MethodTable } from "./rpc/server.ts";
import type { TaskService } from "./service/task-service.ts";

export function bridgeHandlers(service: TaskService): MethodTable {
  return {
    "runtime.list": () => service.runtimeList(),
    "task.submit": (p) => service.submit(p),
    "task.get": (p) => service.get(p.task_id),
    "task.events": (p, ctx) => service.events(p, ctx.signal),
    "task.result.read": (p) => service.readResult(p),
    "task.approval.respond": (p) => service.respondApproval(p),
    "task.question.answer": (p) => service.answerQuestion(p),
    "task.message.send": (p) => service.sendMessage(p),
    "task.cancel": (p) => service.cancel(p),
    "task.list": (p) => service.list(p),
    "recovery.list": () => service.recoveryList(),
    "recovery.clear": (p) => service.recoveryClear(p),
    "metrics.read": () => service.metrics(),
  };
}
