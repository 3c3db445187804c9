/**
 * MCP Tasks end to end (docs/mcp-tasks.md): the SDK's Client over stdio against a real `serverfs mcp`
 * and a real `serverfs bridge` with the fake runtime, once more over Streamable HTTP. submit_agent_task
 * called as a task answers an MCP task whose id is the ServerFS task id; tasks/get, tasks/result,
 * tasks/list and tasks/cancel are read from the Bridge, so they survive a restart of `serverfs mcp`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CallToolResultSchema, type CreateTaskResult, CreateTaskResultSchema, ElicitRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { TASKS_PAGE_SIZE } from "../../src/main/mcp/tasks/bridge-task-store.ts";
import { type BridgeEnv, type BridgeProcess, bridgeEnv, startBridgeProcess } from "../helpers/bridge.ts";
import { type McpSession, startStdio, structured } from "../helpers/mcp-client.ts";
import { poll } from "../helpers/poll.ts";
import { hasStatus, isTerminal, type Json, ok, startHttp, submit, waitForTask } from "./support.ts";

const INVALID_PARAMS = -32602;
const METHOD_NOT_FOUND = -32601;
const NO_SUCH_TASK = `agt_${"0".repeat(24)}`;

let env: BridgeEnv;
let bridge: BridgeProcess;
let mcp: McpSession;

beforeAll(async () => {
  env = bridgeEnv();
  bridge = await startBridgeProcess(env);
  mcp = await startStdio(env.configPath);
}, 60_000);
afterAll(async () => {
  await mcp.close();
  await bridge.stop();
  env.dir.remove();
}, 60_000);

/** submit_agent_task as a task-augmented tools/call (a `review` task of the fake runtime on "repo"). */
function submitAsTask(session: McpSession, args: Json): Promise<CreateTaskResult> {
  return session.client.request(
    { method: "tools/call", params: { name: "submit_agent_task", arguments: { runtime: "fake", workdir: "repo", profile: "review", ...args } } },
    CreateTaskResultSchema,
    { task: { ttl: 60_000 } },
  );
}

const tasksOf = (session: McpSession) => session.client.experimental.tasks;

/** Polls tasks/get until the MCP status is `status`. */
async function mcpStatus(session: McpSession, taskId: string, status: string) {
  let last = "";
  await poll(
    async () => {
      last = (await tasksOf(session).getTask(taskId)).status;
      return last === status;
    },
    20_000,
    `tasks/get status ${status} (last ${last})`,
  );
  return tasksOf(session).getTask(taskId);
}

/** The JSON-RPC code a rejected request carries. */
async function rpcCode(p: Promise<unknown>): Promise<number> {
  try {
    await p;
  } catch (e) {
    if (e instanceof McpError) return e.code;
    throw e;
  }
  throw new Error("the request succeeded");
}

async function approvePending(session: McpSession, taskId: string) {
  const task = await waitForTask(session, taskId, hasStatus("waiting_for_approval"));
  const request = task["pending_request"] as Json;
  await ok(session, "respond_agent_approval", { task_id: taskId, request_id: request["request_id"], decision: "approve_once" });
}

/** get_agent_task's answer without its content text, which says the same. */
const shapeOf = (r: { structuredContent?: unknown; isError?: unknown }) => ({ isError: r.isError ?? false, structured: r.structuredContent });

describe("what a host with the tasks capability sees", () => {
  test("the server declares tasks (list, cancel, tools/call) and only submit_agent_task declares task support", async () => {
    expect(mcp.client.getServerCapabilities()?.tasks).toEqual({ list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const tools = (await mcp.client.listTools()).tools;
    const declaring = tools.filter((t) => t.execution !== undefined);
    expect(declaring.map((t) => [t.name, t.execution])).toEqual([["submit_agent_task", { taskSupport: "optional" }]]);
  }, 60_000);

  test("a plain submit_agent_task call is unchanged: a tool result with the task id, no MCP task", async () => {
    const r = await mcp.call("submit_agent_task", { runtime: "fake", workdir: "repo", profile: "review", prompt: "complete:plain" });
    const s = structured<Json>(r);
    expect(Object.keys(s).sort()).toEqual(["correlation_id", "idempotency_key", "status", "task_id"]);
    expect(s["status"]).toBe("queued");
    expect(r).not.toHaveProperty("task");
    await waitForTask(mcp, String(s["task_id"]), isTerminal);
  }, 60_000);
});

describe("a task-augmented submit through approval to its result", () => {
  test("CreateTaskResult, working → input_required → (approved) completed, and tasks/result is get_agent_task's answer", async () => {
    const created = await submitAsTask(mcp, { prompt: "approval:make test" });
    const taskId = created.task.taskId;
    expect(taskId).toMatch(/^agt_[0-9a-f]{24}$/);
    expect(["working", "input_required"]).toContain(created.task.status);
    expect(created.task.ttl).toBe(168 * 3_600_000);
    expect(created.task.pollInterval).toBeGreaterThan(0);

    const waiting = await mcpStatus(mcp, taskId, "input_required");
    expect(waiting.statusMessage).toBe("waiting_for_approval");

    // tasks/result waits while the approval is pending, reporting the events as progress
    const progress: { progress: number; message?: string }[] = [];
    const result = tasksOf(mcp).getTaskResult(taskId, CallToolResultSchema, {
      onprogress: (p) => progress.push(p),
      timeout: 60_000,
    });
    let settled = false;
    void result.finally(() => {
      settled = true;
    });
    await poll(() => progress.some((p) => p.message?.startsWith("approval.requested")), 20_000, "a progress notification for approval.requested");
    expect(settled).toBe(false);

    await approvePending(mcp, taskId);
    const final = await result;
    const direct = await mcp.call("get_agent_task", { task_id: taskId });
    expect(shapeOf(final)).toEqual(shapeOf(direct));
    expect(final.structuredContent).toMatchObject({ task_id: taskId, status: "succeeded", final_response: "approval=approve_once" });
    expect(final.content).toEqual(direct.content);

    expect(progress.map((p) => p.progress)).toEqual(progress.map((_, i) => i + 1));
    expect(progress.some((p) => p.message?.startsWith("approval.resolved"))).toBe(true);
    const done = await tasksOf(mcp).getTask(taskId);
    expect(done).toMatchObject({ taskId, status: "completed", statusMessage: "succeeded" });
  }, 60_000);

  test("at a client with form elicitation, tasks/result asks the pending approval as a form and answers with the decision", async () => {
    const host = await startStdio(env.configPath, {}, [], { elicitation: {} });
    try {
      const forms: unknown[] = [];
      host.client.setRequestHandler(ElicitRequestSchema, async (request) => {
        forms.push(request.params);
        return { action: "accept", content: { decision: "approve_once" } };
      });
      const taskId = (await submitAsTask(host, { prompt: "approval:make lint" })).task.taskId;
      await mcpStatus(host, taskId, "input_required");
      const final = await tasksOf(host).getTaskResult(taskId, CallToolResultSchema, { timeout: 60_000 });
      expect(forms).toHaveLength(1);
      expect(final.structuredContent).toMatchObject({ task_id: taskId, status: "succeeded", final_response: "approval=approve_once" });
      const answered = host.audit().filter((r) => r["event"] === "agent_elicitation_answered");
      expect(answered).toMatchObject([{ task_id: taskId }]);
      // another session's tasks/result of the same kind of task is never asked
      const other = await submitAsTask(mcp, { prompt: "approval:make other" });
      await mcpStatus(mcp, other.task.taskId, "input_required");
      const waiting = tasksOf(host).getTaskResult(other.task.taskId, CallToolResultSchema, { timeout: 60_000 });
      await approvePending(mcp, other.task.taskId);
      expect((await waiting).structuredContent).toMatchObject({ status: "succeeded" });
      expect(forms).toHaveLength(1);
    } finally {
      await host.close();
    }
  }, 60_000);

  test("without a progressToken tasks/result just answers; a failed task maps to failed with its code", async () => {
    const created = await submitAsTask(mcp, { prompt: "fail:on purpose" });
    const final = await tasksOf(mcp).getTaskResult(created.task.taskId, CallToolResultSchema);
    expect(final.structuredContent).toMatchObject({ status: "failed", error_code: "AGENT_PROVIDER_ERROR" });
    const task = await tasksOf(mcp).getTask(created.task.taskId);
    expect(task.status).toBe("failed");
    expect(task.statusMessage).toStartWith("failed: AGENT_PROVIDER_ERROR");
  }, 60_000);
});

describe("refusals", () => {
  test("a refused task-augmented submit is a JSON-RPC error carrying the ServerFS code", async () => {
    const e = await submitAsTask(mcp, { workdir: "nope", prompt: "complete:x" }).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(McpError);
    expect((e as McpError).message).toContain("WORKDIR_NOT_FOUND: ");
  }, 60_000);

  test("a tool without task support called as a task is method-not-found", async () => {
    const call = mcp.client.request({ method: "tools/call", params: { name: "list_workdirs", arguments: {} } }, CreateTaskResultSchema, {
      task: { ttl: 1_000 },
    });
    expect(await rpcCode(call)).toBe(METHOD_NOT_FOUND);
  }, 60_000);

  test("an unknown task id is invalid params for tasks/get, tasks/result and tasks/cancel", async () => {
    for (const id of [NO_SUCH_TASK, "not-a-task"]) {
      expect(await rpcCode(tasksOf(mcp).getTask(id))).toBe(INVALID_PARAMS);
      expect(await rpcCode(tasksOf(mcp).getTaskResult(id, CallToolResultSchema))).toBe(INVALID_PARAMS);
      expect(await rpcCode(tasksOf(mcp).cancelTask(id))).toBe(INVALID_PARAMS);
    }
  }, 60_000);
});

describe("a task id that cannot be one", () => {
  /** The JSON-RPC error a rejected request carries, its message as the server wrote it. */
  async function rpcFailure(p: Promise<unknown>): Promise<{ code: number; message: string }> {
    const e = await p.catch((err: unknown) => err);
    if (!(e instanceof McpError)) throw new Error(`expected a JSON-RPC error, got ${String(e)}`);
    return { code: e.code, message: e.message.replace(/^MCP error -?\d+: /, "") };
  }
  const NOT_A_TASK = { code: INVALID_PARAMS, message: "AGENT_TASK_NOT_FOUND: no task has this id (a task id is agt_ followed by 24 lowercase hex digits)" };

  // 1 MiB: under stdio's 10 MiB line cap and HTTP's body limit, so the request itself reaches the server;
  // over either the transport answers first (-32600 on stdio, HTTP 413), before any id is looked at
  const huge = `agt_${"a".repeat(1024 * 1024)}`;

  test("tasks/get, tasks/result, tasks/cancel and a tasks/list cursor answer invalid params with a short message, never echoing the id (stdio)", async () => {
    for (const id of [huge, "not-a-task", `${NO_SUCH_TASK}0`]) {
      expect(await rpcFailure(tasksOf(mcp).getTask(id))).toEqual(NOT_A_TASK);
      expect(await rpcFailure(tasksOf(mcp).getTaskResult(id, CallToolResultSchema))).toEqual(NOT_A_TASK);
      expect(await rpcFailure(tasksOf(mcp).cancelTask(id))).toEqual(NOT_A_TASK);
      // a tasks/list cursor is a task id too; the SDK's handler of it puts its own words first
      expect(await rpcFailure(tasksOf(mcp).listTasks(id))).toEqual({
        code: INVALID_PARAMS,
        message: `MCP error ${INVALID_PARAMS}: Failed to list tasks: ${NOT_A_TASK.message}`,
      });
    }
  });

  test("the same over Streamable HTTP", async () => {
    const http = await startHttp(env.configPath);
    try {
      expect(await rpcFailure(tasksOf(http).getTask(huge))).toEqual(NOT_A_TASK);
      expect(await rpcFailure(tasksOf(http).getTaskResult(huge, CallToolResultSchema))).toEqual(NOT_A_TASK);
      expect(await rpcFailure(tasksOf(http).cancelTask(huge))).toEqual(NOT_A_TASK);
    } finally {
      await http.close();
    }
  });
});

describe("tasks/cancel", () => {
  test("cancels the Bridge task; its result is the cancelled get_agent_task; a second cancel is refused", async () => {
    const created = await submitAsTask(mcp, { prompt: "wait:" });
    const taskId = created.task.taskId;
    await waitForTask(mcp, taskId, hasStatus("running"));
    const cancelled = await tasksOf(mcp).cancelTask(taskId);
    expect(cancelled).toMatchObject({ taskId, status: "cancelled" });
    expect((await ok(mcp, "get_agent_task", { task_id: taskId }))["status"]).toBe("cancelled");
    const final = await tasksOf(mcp).getTaskResult(taskId, CallToolResultSchema);
    expect(final.structuredContent).toMatchObject({ task_id: taskId, status: "cancelled" });
    expect(await rpcCode(tasksOf(mcp).cancelTask(taskId))).toBe(INVALID_PARAMS);
    // the one tasks method that changes a task leaves an audit record (the refused repeat never reached the Bridge)
    await poll(() => mcp.audit().some((r) => r["event"] === "tasks_cancel"), 5_000, "the tasks_cancel record");
    expect(mcp.audit().filter((r) => r["event"] === "tasks_cancel")).toMatchObject([{ task_id: taskId, success: true, status: "cancelled" }]);
  }, 60_000);
});

describe("tasks/list", () => {
  test("pages every task the Bridge knows, newest first, along nextCursor", async () => {
    const listAll = async () => {
      const pages: string[][] = [];
      let cursor: string | undefined;
      do {
        const page = await tasksOf(mcp).listTasks(cursor);
        pages.push(page.tasks.map((t) => t.taskId));
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      return pages;
    };
    const before = (await listAll()).flat().length;
    const ids: string[] = [];
    // one after the other, each settled, so the Bridge's active-task limit never refuses one
    for (let i = before; i <= TASKS_PAGE_SIZE; i++) {
      ids.push(await submit(mcp, { profile: "review", prompt: `complete:list ${i}` }));
      await waitForTask(mcp, ids.at(-1)!, isTerminal);
    }
    const pages = await listAll();
    const all = pages.flat();
    expect(pages.length).toBeGreaterThanOrEqual(2);
    expect(pages[0]).toHaveLength(TASKS_PAGE_SIZE);
    expect(new Set(all).size).toBe(all.length);
    // newest first: the tasks just submitted lead, the last one first
    expect(all.slice(0, ids.length)).toEqual([...ids].reverse());
    expect(await rpcCode(tasksOf(mcp).listTasks(NO_SUCH_TASK))).toBe(INVALID_PARAMS);
  }, 60_000);
});

describe("durability", () => {
  test("after `serverfs mcp` is killed and started again, a new client still gets the task's state and result", async () => {
    const created = await submitAsTask(mcp, { prompt: "approval:after restart" });
    const taskId = created.task.taskId;
    await mcpStatus(mcp, taskId, "input_required");

    const pid = mcp.pid;
    expect(typeof pid).toBe("number");
    process.kill(pid as number, "SIGKILL");
    await mcp.close();
    mcp = await startStdio(env.configPath);

    expect((await tasksOf(mcp).getTask(taskId)).status).toBe("input_required");
    const result = tasksOf(mcp).getTaskResult(taskId, CallToolResultSchema);
    await approvePending(mcp, taskId);
    expect((await result).structuredContent).toMatchObject({ task_id: taskId, status: "succeeded", final_response: "approval=approve_once" });
    expect((await tasksOf(mcp).listTasks()).tasks.map((t) => t.taskId)).toContain(taskId);
  }, 60_000);
});

describe("over Streamable HTTP", () => {
  test("a task-augmented submit, progress on the tasks/result stream, and its result", async () => {
    const http = await startHttp(env.configPath);
    try {
      const created = await submitAsTask(http, { prompt: "approval:over http" });
      const taskId = created.task.taskId;
      const messages: string[] = [];
      const result = tasksOf(http).getTaskResult(taskId, CallToolResultSchema, { onprogress: (p) => messages.push(p.message ?? "") });
      await poll(() => messages.some((m) => m.startsWith("approval.requested")), 20_000, "progress for approval.requested over HTTP");
      await approvePending(http, taskId);
      expect((await result).structuredContent).toMatchObject({ task_id: taskId, status: "succeeded", final_response: "approval=approve_once" });
    } finally {
      await http.close();
    }
  }, 60_000);
});

describe("without the Bridge", () => {
  test("the task methods answer AGENT_BRIDGE_UNAVAILABLE as JSON-RPC errors (last: it stops the Bridge)", async () => {
    await bridge.stop();
    const failure = async (p: Promise<unknown>) => {
      const e = await p.catch((err: unknown) => err);
      expect(e).toBeInstanceOf(McpError);
      return { code: (e as McpError).code, unavailable: (e as McpError).message.includes("AGENT_BRIDGE_UNAVAILABLE: ") };
    };
    expect(await failure(tasksOf(mcp).getTask(NO_SUCH_TASK))).toEqual({ code: -32603, unavailable: true });
    expect(await failure(tasksOf(mcp).getTaskResult(NO_SUCH_TASK, CallToolResultSchema))).toEqual({ code: -32603, unavailable: true });
    // the SDK's own handlers of these two use one code for any failure
    expect(await failure(tasksOf(mcp).cancelTask(NO_SUCH_TASK))).toEqual({ code: -32600, unavailable: true });
    expect(await failure(tasksOf(mcp).listTasks())).toEqual({ code: INVALID_PARAMS, unavailable: true });
  }, 60_000);
});
