/**
 * One params schema and one result schema per Bridge RPC method type both ends (docs/bridge-rpc.md#methods):
 * the Bridge's handler table and the MCP side's Bridge caller. The `@ts-expect-error` lines and the
 * type-level checks are the assertions here: `bun run check` (tsc) fails if any of them stops being
 * a type error, or if the two tables stop naming the same methods.
 */
import { expect, test } from "bun:test";
import * as v from "valibot";
import type { MethodHandlers } from "../../src/main/bridge/rpc/server.ts";
import { bridgeHandlers } from "../../src/main/bridge/rpc-handlers.ts";
import { TaskService } from "../../src/main/bridge/service/task-service.ts";
import type { BridgeCaller } from "../../src/main/mcp/agent/agent-tool.ts";
import { METHOD_PARAMS, METHODS, type Method } from "../../src/shared/bridge-protocol/methods.ts";
import { METHOD_RESULTS, type Result, type ResultInput } from "../../src/shared/bridge-protocol/results.ts";

/** Compile-time: the params table and the results table name exactly the same methods. */
type Unpaired = Exclude<keyof typeof METHOD_RESULTS, Method> | Exclude<Method, keyof typeof METHOD_RESULTS>;
const paired: [Unpaired] extends [never] ? true : false = true;

test("every method has a result schema and every result schema a method", () => {
  expect(paired).toBe(true);
  expect(Object.keys(METHOD_RESULTS).sort()).toEqual(Object.keys(METHOD_PARAMS).sort());
  // one object schema per result, loose: a field added within protocol 1 reaches the caller
  for (const m of METHODS) expect(METHOD_RESULTS[m].type).toBe("loose_object");
});

test("the Bridge's table has a handler for exactly the protocol's methods", () => {
  // building the table calls no service method, so a service without state will do
  const table = bridgeHandlers(Object.create(TaskService.prototype));
  expect(Object.keys(table).sort()).toEqual([...METHODS].sort());
});

const EVENTS_PAGE = { correlation_id: null, events: [], next_after_event_id: 0, last_event_id: 0 };

test("a handler's params are the method's params after defaults, and it returns the method's result", async () => {
  const handlers: MethodHandlers = {
    // the default is applied before the handler runs: limit is a number, never undefined
    "task.events": (p) => ({ ...EVENTS_PAGE, next_after_event_id: p.limit + p.after_event_id }),
    // @ts-expect-error task.get has no limit
    "task.get": (p) => ({ limit: p.limit }),
    // @ts-expect-error a task.cancel answer names the task's status
    "task.cancel": (p) => ({ task_id: p.task_id, correlation_id: null }),
  };
  // the service functions behind the handlers name their result type: a field the schema does not
  // name is refused there (add it to the schema first)
  // @ts-expect-error extra is no field of a recovery.clear answer
  const clear = (slot: number): ResultInput<"recovery.clear"> => ({ slot, cleared: false, task_id: null, extra: 1 });
  expect(Object.keys(handlers)).toEqual(["task.events", "task.get", "task.cancel"]);
  expect(clear(1).slot).toBe(1);
});

test("a client call's params are what the schema accepts, and its answer is the method's result", async () => {
  const sent: unknown[] = [];
  const answers: { [M in Method]?: Result<M> } = {
    "task.events": v.parse(METHOD_RESULTS["task.events"], EVENTS_PAGE),
    "recovery.clear": { slot: 1, cleared: false, task_id: null },
  };
  const call: BridgeCaller = async (method, params) => {
    sent.push([method, params]);
    const answer = answers[method];
    if (answer === undefined) throw new Error("no answer");
    return answer;
  };
  const opts = { signal: new AbortController().signal };
  const page = await call("task.events", { task_id: "agt_x" }, opts);
  const cursor: number = page.next_after_event_id;
  // @ts-expect-error an events page has no status
  const status: string = page.status;
  expect(cursor).toBe(0);
  expect(status).toBeUndefined();
  // @ts-expect-error task.cancel needs its task_id
  await call("task.cancel", {}, opts).catch(() => undefined);
  // @ts-expect-error recovery.clear's slot is an integer, not a string
  await call("recovery.clear", { slot: "1", confirm: true }, opts);
  // @ts-expect-error no such method
  await call("task.delete", { task_id: "agt_x" }, opts).catch(() => undefined);
  expect(sent).toHaveLength(4);
});
