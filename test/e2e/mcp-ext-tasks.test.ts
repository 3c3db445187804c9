/**
 * MCP Tasks as the 2026-07-28 extension `io.modelcontextprotocol/tasks` end to end
 * (docs/mcp-tasks.md#the-2026-07-28-extension): raw 2026-07-28 requests over Streamable HTTP and stdio
 * against a real `serverfs mcp` and a real `serverfs bridge` with the fake runtime. A request that
 * declares the extension gets submit_agent_task as a task handle whose id is the ServerFS task id;
 * tasks/get shows a pending approval or question as its inputRequests, tasks/update answers them,
 * tasks/cancel cancels, and a completed task carries get_agent_task's answer. Everything is read from
 * the Bridge, so the loop holds with `serverfs mcp --http` restarted between every step.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  createApplicationInputHandler,
  createTaskSessionFromClient,
  type JsonRpcResponse,
  resultFromTaskOutcome,
} from "@modelcontextprotocol/ext-tasks/client";
import type { Subprocess } from "bun";
import { type BridgeEnv, type BridgeProcess, bridgeEnv, startBridgeProcess } from "../helpers/bridge.ts";
import { parseAudit } from "../helpers/mcp-client.ts";
import { poll } from "../helpers/poll.ts";
import { spawnCli, waitForAuditEvent } from "../helpers/process.ts";
import { modernMeta, postModern } from "../helpers/raw-http.ts";
import { spawnRaw } from "../helpers/raw-stdio.ts";

type Json = Record<string, unknown>;

const TASKS = "io.modelcontextprotocol/tasks";
const WITH_TASKS = { extensions: { [TASKS]: {} }, elicitation: { form: {} } };
const NO_SUCH_TASK = `agt_${"0".repeat(24)}`;

let env: BridgeEnv;
let bridge: BridgeProcess;
const procs: Subprocess[] = [];

beforeAll(async () => {
  env = bridgeEnv({ config: { server: { protocol_revisions: ["2025-11-25", "2026-07-28"] } } });
  bridge = await startBridgeProcess(env);
}, 30_000);
afterAll(async () => {
  for (const p of procs) p.kill("SIGTERM");
  await Promise.all(procs.map((p) => p.exited));
  await bridge.stop();
  env.dir.remove();
});

/** One 2026-07-28 `serverfs mcp`: a request sender, and a stop that kills the process. */
interface Modern {
  request(method: string, params: Json, capabilities?: Json): Promise<{ status: number; body: Json }>;
  stop(): Promise<void>;
}

/** A `serverfs mcp --http` on a free loopback port; its `/mcp` URL. */
async function startHttpProcess(): Promise<{ url: string; proc: Subprocess }> {
  const proc = spawnCli(["mcp", "--config", env.configPath, "--http", "127.0.0.1:0"]);
  procs.push(proc);
  const startup = await waitForAuditEvent(proc.stderr, "startup", 20_000);
  return { url: `http://${String(startup["listen"])}/mcp`, proc };
}

async function startHttp(): Promise<Modern> {
  const { url, proc } = await startHttpProcess();
  return {
    request: (method, params, capabilities = WITH_TASKS) => postModern(url, { method, params }, { capabilities }),
    async stop() {
      proc.kill("SIGKILL");
      await proc.exited;
    },
  };
}

/** One 2026-07-28 `serverfs mcp` over stdio, driven by raw lines; `audit()` is its log so far. */
async function startStdio(): Promise<Modern & { audit(): Json[] }> {
  const raw = spawnRaw(env.configPath);
  procs.push(raw.proc);
  let id = 0;
  return {
    audit: () => parseAudit(raw.stderr()),
    async request(method, params, capabilities = WITH_TASKS) {
      const n = ++id;
      raw.send({ jsonrpc: "2.0", id: n, method, params: { ...params, _meta: modernMeta(capabilities) } });
      return { status: 200, body: await raw.answer(n) };
    },
    async stop() {
      raw.proc.kill("SIGKILL");
      await raw.proc.exited;
    },
  };
}

async function result(p: Promise<{ status: number; body: Json }>): Promise<Json> {
  const { status, body } = await p;
  if (body["error"] !== undefined) throw new Error(`${status} ${JSON.stringify(body["error"])}`);
  return body["result"] as Json;
}

async function failure(p: Promise<{ status: number; body: Json }>): Promise<{ status: number; error: Json }> {
  const { status, body } = await p;
  return { status, error: body["error"] as Json };
}

const submitArgs = (prompt: string) => ({ name: "submit_agent_task", arguments: { runtime: "fake", workdir: "repo", profile: "review", prompt } });

/** tasks/get, asked again until the task's status is `status`. */
async function taskIn(server: () => Modern, taskId: string, status: string): Promise<Json> {
  let last: Json = {};
  await poll(
    async () => {
      last = await result(server().request("tasks/get", { taskId }));
      return last["status"] === status;
    },
    20_000,
    `tasks/get status ${status}`,
  );
  return last;
}

/** The one input request of a task that waits for an answer: its key (the Bridge's request_id) and params. */
function onlyInputRequest(task: Json): { key: string; params: Json } {
  const entries = Object.entries(task["inputRequests"] as Record<string, Json>);
  expect(entries).toHaveLength(1);
  const [key, request] = entries[0]!;
  expect(request["method"]).toBe("elicitation/create");
  return { key, params: request["params"] as Json };
}

const finalOf = (task: Json) => (task["result"] as Json)["structuredContent"] as Json;

describe("over Streamable HTTP", () => {
  let http: Modern;
  beforeAll(async () => {
    http = await startHttp();
  }, 30_000);
  afterAll(() => http.stop());

  test("server/discover declares the extension", async () => {
    const discover = await result(http.request("server/discover", {}));
    expect((discover["capabilities"] as Json)["extensions"]).toEqual({ [TASKS]: {} });
  });

  test("submit as a task: the exact CreateTaskResult; then tasks/get through an approval answered with tasks/update to the result", async () => {
    const created = await result(http.request("tools/call", submitArgs("approval:make test")));
    expect(Object.keys(created).sort()).toEqual([
      "_meta",
      "createdAt",
      "lastUpdatedAt",
      "pollIntervalMs",
      "resultType",
      "status",
      "statusMessage",
      "taskId",
      "ttlMs",
    ]);
    expect(created).toMatchObject({ resultType: "task", ttlMs: 168 * 3_600_000, pollIntervalMs: 2_000 });
    const taskId = String(created["taskId"]);
    expect(taskId).toMatch(/^agt_[0-9a-f]{24}$/);

    const waiting = await taskIn(() => http, taskId, "input_required");
    expect(waiting).toMatchObject({ resultType: "complete", statusMessage: "waiting_for_approval" });
    const { key, params } = onlyInputRequest(waiting);
    expect(key).toMatch(/^req_/);
    expect(params).toMatchObject({ mode: "form", requestedSchema: { required: ["decision"] } });
    expect(String(params["message"])).toContain("make test");

    expect(
      await result(http.request("tasks/update", { taskId, inputResponses: { [key]: { action: "accept", content: { decision: "approve_once" } } } })),
    ).toEqual(expect.objectContaining({ resultType: "complete" }));
    const done = await taskIn(() => http, taskId, "completed");
    expect(finalOf(done)).toMatchObject({ task_id: taskId, status: "succeeded", final_response: "approval=approve_once" });
    const direct = await result(http.request("tools/call", { name: "get_agent_task", arguments: { task_id: taskId } }));
    expect(done["result"]).toEqual({ content: direct["content"], structuredContent: direct["structuredContent"], resultType: "complete" });
  });

  test("a deny goes through; a declined form, an answer for another key and one that answers no form are ignored", async () => {
    const taskId = String((await result(http.request("tools/call", submitArgs("approval:rm -rf build"))))["taskId"]);
    const { key } = onlyInputRequest(await taskIn(() => http, taskId, "input_required"));
    await result(http.request("tasks/update", { taskId, inputResponses: { [key]: { action: "decline" }, req_other: { action: "accept", content: {} } } }));
    // a decision the request does not offer answers no form of it: refused, the request stays open
    await result(http.request("tasks/update", { taskId, inputResponses: { [key]: { action: "accept", content: { decision: "approve_forever" } } } }));
    expect(onlyInputRequest(await taskIn(() => http, taskId, "input_required")).key).toBe(key);
    await result(http.request("tasks/update", { taskId, inputResponses: { [key]: { action: "accept", content: { decision: "deny" } } } }));
    expect(finalOf(await taskIn(() => http, taskId, "completed"))).toMatchObject({ status: "succeeded", final_response: "approval=deny" });
    // the request is answered: a late answer to it is acknowledged and changes nothing
    await result(http.request("tasks/update", { taskId, inputResponses: { [key]: { action: "accept", content: { decision: "approve_once" } } } }));
    expect(finalOf(await taskIn(() => http, taskId, "completed"))).toMatchObject({ final_response: "approval=deny" });
  });

  test("a question is answered through its form", async () => {
    const taskId = String((await result(http.request("tools/call", submitArgs("question:which one?"))))["taskId"]);
    const waiting = await taskIn(() => http, taskId, "input_required");
    expect(waiting["statusMessage"]).toBe("waiting_for_question");
    const { key, params } = onlyInputRequest(waiting);
    const choice = (params["requestedSchema"] as { properties: Record<string, { enum?: string[] }> }).properties["answer_1"]!;
    expect(choice.enum).toEqual(["a", "b"]);
    await result(http.request("tasks/update", { taskId, inputResponses: { [key]: { action: "accept", content: { answer_1: "b" } } } }));
    const final = finalOf(await taskIn(() => http, taskId, "completed"));
    expect(JSON.parse(String(final["final_response"]))).toEqual([{ question_id: "q1", selected_option_ids: ["b"] }]);
  });

  test("tasks/cancel cancels and acknowledges again once the task has ended; an unknown id is -32602", async () => {
    const taskId = String((await result(http.request("tools/call", submitArgs("wait:"))))["taskId"]);
    await taskIn(() => http, taskId, "working");
    expect(await result(http.request("tasks/cancel", { taskId }))).toMatchObject({ resultType: "complete" });
    const cancelled = await taskIn(() => http, taskId, "cancelled");
    expect(cancelled).not.toHaveProperty("result");
    expect(await result(http.request("tasks/cancel", { taskId }))).toMatchObject({ resultType: "complete" });
    for (const method of ["tasks/get", "tasks/cancel", "tasks/update"]) {
      const unknown = await failure(http.request(method, { taskId: NO_SUCH_TASK, inputResponses: {} }));
      expect(unknown.error).toMatchObject({ code: -32602 });
      expect(String(unknown.error["message"])).toStartWith("AGENT_TASK_NOT_FOUND: ");
    }
  });

  test("a failed agent is a completed task whose result says failed", async () => {
    const taskId = String((await result(http.request("tools/call", submitArgs("fail:boom"))))["taskId"]);
    const done = await taskIn(() => http, taskId, "completed");
    expect(String(done["statusMessage"])).toStartWith("failed: AGENT_PROVIDER_ERROR");
    expect(finalOf(done)).toMatchObject({ status: "failed", error_code: "AGENT_PROVIDER_ERROR" });
  });

  test("without the extension declared: a plain tool result, and -32021 naming it on tasks/get, update and cancel", async () => {
    const plain = await result(http.request("tools/call", submitArgs("complete:plain"), {}));
    expect(plain["resultType"]).toBe("complete");
    const taskId = String((plain["structuredContent"] as Json)["task_id"]);
    expect(taskId).toMatch(/^agt_/);
    for (const method of ["tasks/get", "tasks/update", "tasks/cancel"]) {
      const refused = await failure(http.request(method, { taskId, inputResponses: {} }, { elicitation: { form: {} } }));
      expect(refused).toMatchObject({ status: 400, error: { code: -32021, data: { requiredCapabilities: { extensions: { [TASKS]: {} } } } } });
    }
    // with it, the same task is readable as a task
    expect(await taskIn(() => http, taskId, "completed")).toMatchObject({ taskId });
  });

  test("a refused submit is the tool's error result, not a task; tasks/list and tasks/result are gone (-32601)", async () => {
    const refused = await result(http.request("tools/call", { name: "submit_agent_task", arguments: { runtime: "fake", workdir: "nope", prompt: "x" } }));
    expect(refused).toMatchObject({ resultType: "complete", isError: true });
    for (const method of ["tasks/list", "tasks/result"]) {
      const gone = await failure(http.request(method, method === "tasks/list" ? {} : { taskId: NO_SUCH_TASK }));
      expect(gone).toMatchObject({ status: 404, error: { code: -32601 } });
    }
  });

  test("a client that offers no form elicitation sees input_required with no input requests", async () => {
    const taskId = String((await result(http.request("tools/call", submitArgs("approval:no forms"))))["taskId"]);
    await taskIn(() => http, taskId, "input_required");
    const bare = await result(http.request("tasks/get", { taskId }, { extensions: { [TASKS]: {} } }));
    expect(bare).toMatchObject({ status: "input_required", inputRequests: {} });
    await result(http.request("tasks/cancel", { taskId }));
  });
});

/** A `serverfs mcp --http` that `step` runs one step against and then replaces with a fresh process. */
async function restartingHttp() {
  let http = await startHttp();
  return {
    now: () => http,
    async step<T>(run: () => Promise<T>): Promise<T> {
      const out = await run();
      await http.stop();
      http = await startHttp();
      return out;
    },
    stop: () => http.stop(),
  };
}

describe("durability", () => {
  test("the whole loop with `serverfs mcp --http` restarted between every step", async () => {
    const { step, now, stop } = await restartingHttp();
    const http = { request: (...args: Parameters<Modern["request"]>) => now().request(...args) };
    try {
      const created = await step(() => result(http.request("tools/call", submitArgs("approval:across restarts"))));
      const taskId = String(created["taskId"]);
      const waiting = await step(() => taskIn(now, taskId, "input_required"));
      const { key } = onlyInputRequest(waiting);
      await step(() =>
        result(http.request("tasks/update", { taskId, inputResponses: { [key]: { action: "accept", content: { decision: "approve_once" } } } })),
      );
      const done = await step(() => taskIn(now, taskId, "completed"));
      expect(finalOf(done)).toMatchObject({ status: "succeeded", final_response: "approval=approve_once" });
      const read = await result(http.request("tools/call", { name: "get_agent_task", arguments: { task_id: taskId } }));
      expect(read["structuredContent"]).toEqual(finalOf(done));
    } finally {
      await stop();
    }
  }, 120_000);

  test("the same loop with the approval answered through a round trip (InputRequiredResult, then the retry), restarted between every step", async () => {
    const { step, now, stop } = await restartingHttp();
    const http = { request: (...args: Parameters<Modern["request"]>) => now().request(...args) };
    try {
      const created = await step(() => result(http.request("tools/call", submitArgs("approval:round trip across restarts"))));
      const taskId = String(created["taskId"]);
      await step(() => taskIn(now, taskId, "input_required"));
      // get_agent_task answers the form as an InputRequiredResult (docs/elicitation.md#protocol-revisions)
      const getTask = { name: "get_agent_task", arguments: { task_id: taskId } };
      const asked = await step(() => result(http.request("tools/call", getTask)));
      expect(asked["resultType"]).toBe("input_required");
      const [requestId] = Object.keys(asked["inputRequests"] as Json);
      // the retry, taken by a process that never saw the form, carries the answer and the signed state
      const retried = await step(() =>
        result(
          http.request("tools/call", {
            ...getTask,
            inputResponses: { [requestId!]: { action: "accept", content: { decision: "approve_once" } } },
            requestState: asked["requestState"],
          }),
        ),
      );
      expect(retried["resultType"]).toBe("complete");
      const done = await step(() => taskIn(now, taskId, "completed"));
      expect(finalOf(done)).toMatchObject({ status: "succeeded", final_response: "approval=approve_once" });
      const read = await result(http.request("tools/call", getTask));
      expect(read["structuredContent"]).toEqual(finalOf(done));
    } finally {
      await stop();
    }
  }, 120_000);
});

describe("the SDK's Tasks client (@modelcontextprotocol/ext-tasks) as a second requester", () => {
  test("it runs submit_agent_task as a task, answers the approval form through tasks/update and settles with get_agent_task's answer", async () => {
    const { url, proc } = await startHttpProcess();
    const client = new Client({ name: "t", version: "1" }, { capabilities: WITH_TASKS, versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    const forms: string[] = [];
    const session = createTaskSessionFromClient(client, {
      endpointId: "serverfs",
      v2RequestFraming: { protocolVersion: "2026-07-28", clientInfo: { name: "t", version: "1" }, clientCapabilities: WITH_TASKS },
      // the v2 client's own codec refuses a task handle, so the Tasks client sends its requests itself
      rawDispatch: async (request) => {
        const { body } = await postModern(url, request as { method: string; params: Json });
        return body as JsonRpcResponse;
      },
      onInputRequest: createApplicationInputHandler({
        elicitation: (request) => {
          forms.push(String(request.params["message"]));
          return { action: "accept", content: { decision: "approve_once" } };
        },
        sampling: () => Promise.reject(new Error("no sampling here")),
        roots: () => Promise.reject(new Error("no roots here")),
      }),
    });
    try {
      const execution = await session.callTool("submit_agent_task", {
        runtime: "fake",
        workdir: "repo",
        profile: "review",
        prompt: "approval:second requester",
      });
      const { outcome } = await execution.settle();
      const final = resultFromTaskOutcome(outcome) as { structuredContent?: Json };
      expect(final.structuredContent).toMatchObject({ status: "succeeded", final_response: "approval=approve_once" });
      expect(forms).toHaveLength(1);
      expect(forms[0]).toContain("second requester");
    } finally {
      await session.close();
      await client.close();
      proc.kill("SIGTERM");
    }
  }, 60_000);
});

describe("over stdio", () => {
  test("submit as a task, approval answered with tasks/update (audited), tasks/get to the result", async () => {
    const stdio = await startStdio();
    try {
      const discover = await result(stdio.request("server/discover", {}));
      expect((discover["capabilities"] as Json)["extensions"]).toEqual({ [TASKS]: {} });
      const created = await result(stdio.request("tools/call", submitArgs("approval:over stdio")));
      expect(created).not.toHaveProperty("content");
      const taskId = String(created["taskId"]);
      const { key } = onlyInputRequest(await taskIn(() => stdio, taskId, "input_required"));
      await result(stdio.request("tasks/update", { taskId, inputResponses: { [key]: { action: "accept", content: { decision: "approve_once" } } } }));
      expect(finalOf(await taskIn(() => stdio, taskId, "completed"))).toMatchObject({ final_response: "approval=approve_once" });
      const refused = await failure(stdio.request("tasks/get", { taskId }, {}));
      expect(refused.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { extensions: { [TASKS]: {} } } } });
      // the answer is audited as a form's is, and the submit as a tool call
      await poll(() => stdio.audit().some((r) => r["event"] === "agent_elicitation_answered"), 5_000, "the agent_elicitation_answered record");
      expect(stdio.audit().filter((r) => r["event"] === "agent_elicitation_answered")).toMatchObject([
        { task_id: taskId, request_id: key, kind: "approval", action: "accept", decision: "approve_once", outcome: "resolved" },
      ]);
      expect(stdio.audit().some((r) => r["event"] === "tool_call" && r["tool"] === "submit_agent_task" && r["task_id"] === taskId)).toBe(true);
    } finally {
      await stdio.stop();
    }
  }, 60_000);
});

describe("without the Bridge", () => {
  test("tasks/get, tasks/update and tasks/cancel answer AGENT_BRIDGE_UNAVAILABLE as JSON-RPC errors; a submit is the tool's error (last: it stops the Bridge)", async () => {
    const http = await startHttp();
    try {
      await bridge.stop();
      for (const method of ["tasks/get", "tasks/update", "tasks/cancel"]) {
        const { error } = await failure(http.request(method, { taskId: NO_SUCH_TASK, inputResponses: {} }));
        expect(error["code"]).toBe(-32603);
        expect(String(error["message"])).toStartWith("AGENT_BRIDGE_UNAVAILABLE: ");
      }
      expect(await result(http.request("tools/call", submitArgs("complete:no bridge")))).toMatchObject({ resultType: "complete", isError: true });
    } finally {
      await http.stop();
    }
  });
});
