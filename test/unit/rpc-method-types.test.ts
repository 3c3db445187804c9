/**
 * One params schema per Bridge RPC method types both ends (docs/bridge-rpc.md#methods): the Bridge's
 * handler table and the MCP side's Bridge caller. The `@ts-expect-error` lines are the assertions
 * here: `bun run check` (tsc) fails if any of them stops being a type error.
 */
import { expect, test } from "bun:test";
import type { MethodHandlers } from "../../src/main/bridge/rpc/server.ts";
import { bridgeHandlers } from "../../src/main/bridge/rpc-handlers.ts";
import { TaskService } from "../../src/main/bridge/service/task-service.ts";
import type { BridgeCaller } from "../../src/main/mcp/agent/agent-tool.ts";
import { METHODS } from "../../src/shared/bridge-protocol/methods.ts";

test("the Bridge's table has a handler for exactly the protocol's methods", () => {
  // building the table calls no service method, so a service without state will do
  const table = bridgeHandlers(Object.create(TaskService.prototype));
  expect(Object.keys(table).sort()).toEqual([...METHODS].sort());
});

test("a handler's params are the method's params after defaults; a client call's are what the schema accepts", async () => {
  const handlers: MethodHandlers = {
    // the default is applied before the handler runs: limit is a number, never undefined
    "task.events": (p) => ({ next: p.limit + p.after_event_id }),
    // @ts-expect-error task.get has no limit
    "task.get": (p) => ({ limit: p.limit }),
  };
  const sent: unknown[] = [];
  const call: BridgeCaller = async (method, params) => {
    sent.push([method, params]);
    return {};
  };
  const opts = { signal: new AbortController().signal };
  await call("task.events", { task_id: "agt_x" }, opts);
  // @ts-expect-error task.cancel needs its task_id
  await call("task.cancel", {}, opts);
  // @ts-expect-error recovery.clear's slot is an integer, not a string
  await call("recovery.clear", { slot: "1", confirm: true }, opts);
  // @ts-expect-error no such method
  await call("task.delete", { task_id: "agt_x" }, opts);
  expect(Object.keys(handlers)).toEqual(["task.events", "task.get"]);
  expect(sent).toHaveLength(4);
});
