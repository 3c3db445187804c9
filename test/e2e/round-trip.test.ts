/**
 * Approvals and questions as multi-round-trip requests (revision 2026-07-28, docs/elicitation.md#protocol-revisions):
 * a real `serverfs bridge` with the fake runtime and real `serverfs mcp` processes serving both
 * revisions. The SDK's v2 client answers InputRequiredResults through its elicitation handler as a host
 * would, over stdio and HTTP; raw 2026-07-28 POSTs send the retries a client should not (a forged,
 * altered, replayed, expired or misplaced requestState) and move the retry to another process, or to a
 * restarted one.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, statSync } from "node:fs";
import { join } from "node:path";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from "@modelcontextprotocol/client";
import { StdioClientTransport as ModernStdio } from "@modelcontextprotocol/client/stdio";
import { type BridgeEnv, type BridgeProcess, bridgeEnv, call, startBridgeProcess } from "../helpers/bridge.ts";
import { parseAudit } from "../helpers/mcp-client.ts";
import { poll } from "../helpers/poll.ts";
import { spawnCli } from "../helpers/process.ts";
import { postModern } from "../helpers/raw-http.ts";
import { REPO_ROOT, SERVERFS } from "../helpers/workspace.ts";

setDefaultTimeout(60_000);

type Json = Record<string, unknown>;
type Reply = { action: "accept" | "decline" | "cancel"; content?: Record<string, string | number | boolean | string[]> };

const BOTH = { server: { protocol_revisions: ["2025-11-25", "2026-07-28"] } };
const CAPABILITIES = { elicitation: { form: {} } };

let env: BridgeEnv;
let bridge: BridgeProcess;
const procs: ReturnType<typeof spawnCli>[] = [];

/** A `serverfs mcp --http` on a free port of `configPath`: its `/mcp` URL and process. */
async function startHttp(configPath: string): Promise<{ url: string; proc: ReturnType<typeof spawnCli>; audit: () => Json[] }> {
  const proc = spawnCli(["mcp", "--config", configPath, "--http", "127.0.0.1:0"]);
  procs.push(proc);
  let err = "";
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stderr) err += decoder.decode(chunk, { stream: true });
  })();
  await poll(() => parseAudit(err).some((r) => r["event"] === "startup"), 20_000, "serverfs mcp --http startup");
  const startup = parseAudit(err).find((r) => r["event"] === "startup")!;
  return { url: `http://${String(startup["listen"])}/mcp`, proc, audit: () => parseAudit(err) };
}

/** One raw 2026-07-28 tools/call: its JSON-RPC answer. */
async function rawCall(url: string, name: string, args: Json, retry: Json = {}, id = 1): Promise<Json> {
  return (await postModern(url, { id, method: "tools/call", params: { name, arguments: args, ...retry } }, { capabilities: CAPABILITIES })).body;
}

const resultOf = (answer: Json) => answer["result"] as Json;
const structuredOf = (answer: Json) => resultOf(answer)["structuredContent"] as Json;

/** Submits an `approval:` (or `question:`) task through the raw HTTP path; its id. */
async function submitRaw(url: string, prompt: string): Promise<string> {
  const answer = await rawCall(url, "submit_agent_task", { runtime: "fake", workdir: "repo", profile: "review", prompt });
  return String(structuredOf(answer)["task_id"]);
}

/** The Bridge's view of a task once `until` holds. */
async function bridgeTask(taskId: string, until: (t: Json) => boolean): Promise<Json> {
  let task: Json = {};
  await poll(
    async () => {
      task = await call<Json>(env.socketPath, "task.get", { task_id: taskId });
      return until(task);
    },
    20_000,
    () => `task ${taskId} in ${String(task["status"])}`,
  );
  return task;
}

const waiting = (t: Json) => t["status"] === "waiting_for_approval" || t["status"] === "waiting_for_question";
const ended = (t: Json) => ["succeeded", "failed", "cancelled", "interrupted"].includes(String(t["status"]));

/** The InputRequiredResult get_agent_task answers for a task waiting on a request, with that request's id. */
async function formOf(url: string, taskId: string, tool = "get_agent_task", args: Json = { task_id: taskId }): Promise<{ result: Json; requestId: string }> {
  const task = await bridgeTask(taskId, waiting);
  const requestId = String((task["pending_request"] as Json)["request_id"]);
  const answer = await rawCall(url, tool, args);
  return { result: resultOf(answer), requestId };
}

const retryOf = (form: { result: Json; requestId: string }, reply: Reply, state = String(form.result["requestState"])): Json => ({
  inputResponses: { [form.requestId]: reply },
  requestState: state,
});

const APPROVE: Reply = { action: "accept", content: { decision: "approve_once" } };

/** Whether the task's request was decided (an `approval.resolved` event exists). */
async function decided(taskId: string): Promise<boolean> {
  const page = await call<{ events: Json[] }>(env.socketPath, "task.events", { task_id: taskId, after_event_id: 0, limit: 500 });
  return page.events.some((e) => e["event_type"] === "approval.resolved" || e["event_type"] === "question.answered");
}

/** A v2 client pinned to 2026-07-28 whose human replies `reply(form)`; records the forms shown. */
function modernClient(reply: (form: Json) => Reply): { client: ModernClient; forms: Json[] } {
  const client = new ModernClient({ name: "t", version: "1" }, { capabilities: CAPABILITIES, versionNegotiation: { mode: { pin: "2026-07-28" } } });
  const forms: Json[] = [];
  client.setRequestHandler("elicitation/create", async (request) => {
    forms.push(request.params as Json);
    return reply(request.params as Json);
  });
  return { client, forms };
}

beforeAll(async () => {
  env = bridgeEnv({ config: BOTH });
  bridge = await startBridgeProcess(env);
});

afterAll(async () => {
  for (const p of procs) p.kill("SIGTERM");
  await Promise.all(procs.map((p) => p.exited));
  await bridge.stop();
  env.dir.remove();
});

describe("a host answering through its elicitation handler", () => {
  test("over stdio: an accepted approval decides it and the task goes on; the form is today's", async () => {
    const { client, forms } = modernClient(() => APPROVE);
    await client.connect(
      new ModernStdio({ command: SERVERFS[0]!, args: [...SERVERFS.slice(1), "mcp", "--config", env.configPath], cwd: REPO_ROOT, stderr: "ignore" }),
    );
    try {
      expect(client.getProtocolEra()).toBe("modern");
      const submitted = await client.callTool({
        name: "submit_agent_task",
        arguments: { runtime: "fake", workdir: "repo", profile: "review", prompt: "approval:echo round-trip" },
      });
      const taskId = String((submitted.structuredContent as Json)["task_id"]);
      await bridgeTask(taskId, waiting);
      const seen = await client.callTool({ name: "get_agent_task", arguments: { task_id: taskId } });
      expect(seen.isError).toBeFalsy();
      expect(forms).toHaveLength(1);
      expect(forms[0]!["mode"]).toBe("form");
      expect(String(forms[0]!["message"])).toContain("echo round-trip");
      expect(String(forms[0]!["message"])).toContain(taskId);
      const schema = forms[0]!["requestedSchema"] as { properties: Record<string, Json>; required: string[] };
      expect(schema.properties["decision"]!["enum"]).toEqual(["approve_once", "approve_session", "deny", "cancel_task"]);
      const done = await bridgeTask(taskId, ended);
      expect(done["final_response"]).toBe("approval=approve_once");
    } finally {
      await client.close();
    }
  });

  test("over HTTP: a question is answered, and a declined approval decides nothing", async () => {
    const { url } = await startHttp(env.configPath);
    let human: (form: Json) => Reply = (form) => {
      const choices = ((form["requestedSchema"] as { properties: Record<string, Json> }).properties["answer_1"]!["enum"] as string[]) ?? [];
      return { action: "accept", content: { answer_1: choices[0]!, text_1: "typed in the host" } };
    };
    const { client, forms } = modernClient((form) => human(form));
    await client.connect(new ModernHttp(new URL(url)));
    try {
      const question = await submitRaw(url, "question:which one?");
      await bridgeTask(question, waiting);
      await client.callTool({ name: "get_agent_task", arguments: { task_id: question } });
      const answered = await bridgeTask(question, ended);
      expect(String(answered["final_response"])).toContain('"selected_option_ids":["a"]');
      expect(String(answered["final_response"])).toContain("typed in the host");

      human = () => ({ action: "decline" });
      const approval = await submitRaw(url, "approval:echo declined");
      await bridgeTask(approval, waiting);
      const asked = forms.length;
      const seen = await client.callTool({ name: "get_agent_task", arguments: { task_id: approval } });
      expect(forms.length).toBe(asked + 1);
      expect((seen.structuredContent as Json)["status"]).toBe("waiting_for_approval");
      expect(await decided(approval)).toBe(false);
      await call(env.socketPath, "task.cancel", { task_id: approval });
    } finally {
      await client.close();
    }
  });
});

describe("who is asked", () => {
  test("over stdio only the connection that submitted the task; over HTTP any caller that names it", async () => {
    const stdio = () =>
      new ModernStdio({ command: SERVERFS[0]!, args: [...SERVERFS.slice(1), "mcp", "--config", env.configPath], cwd: REPO_ROOT, stderr: "ignore" });
    const submitter = modernClient(() => ({ action: "decline" }));
    const other = modernClient(() => ({ action: "decline" }));
    await submitter.client.connect(stdio());
    await other.client.connect(stdio());
    try {
      const submitted = await submitter.client.callTool({
        name: "submit_agent_task",
        arguments: { runtime: "fake", workdir: "repo", profile: "review", prompt: "approval:echo whose" },
      });
      const taskId = String((submitted.structuredContent as Json)["task_id"]);
      await bridgeTask(taskId, waiting);
      const seen = await other.client.callTool({ name: "get_agent_task", arguments: { task_id: taskId } });
      expect((seen.structuredContent as Json)["status"]).toBe("waiting_for_approval");
      expect(other.forms).toHaveLength(0);
      await submitter.client.callTool({ name: "get_agent_task", arguments: { task_id: taskId } });
      expect(submitter.forms).toHaveLength(1);

      const { url } = await startHttp(env.configPath);
      const form = await formOf(url, taskId);
      expect(form.result["resultType"]).toBe("input_required");
      await call(env.socketPath, "task.cancel", { task_id: taskId });
    } finally {
      await submitter.client.close();
      await other.client.close();
    }
  });
});

describe("the InputRequiredResult and its retry, raw", () => {
  let url: string;
  let audit: () => Json[];
  beforeAll(async () => {
    ({ url, audit } = await startHttp(env.configPath));
  });

  test("names the pending request, carries today's form and a requestState; the retry decides and answers the task", async () => {
    const taskId = await submitRaw(url, "approval:echo raw");
    const form = await formOf(url, taskId);
    expect(form.result["resultType"]).toBe("input_required");
    const requests = form.result["inputRequests"] as Record<string, Json>;
    expect(Object.keys(requests)).toEqual([form.requestId]);
    expect(requests[form.requestId]!["method"]).toBe("elicitation/create");
    expect((requests[form.requestId]!["params"] as Json)["mode"]).toBe("form");
    expect(String((requests[form.requestId]!["params"] as Json)["message"])).toContain("echo raw");
    expect(form.result["requestState"]).toBeString();

    const answer = await rawCall(url, "get_agent_task", { task_id: taskId }, retryOf(form, APPROVE), 2);
    expect(resultOf(answer)["resultType"]).toBe("complete");
    expect(resultOf(answer)["isError"]).toBeFalsy();
    expect((await bridgeTask(taskId, ended))["final_response"]).toBe("approval=approve_once");
    await poll(() => audit().some((r) => r["event"] === "agent_elicitation_answered" && r["task_id"] === taskId && r["outcome"] === "resolved"));
    expect(audit().some((r) => r["event"] === "tool_call" && r["tool"] === "get_agent_task" && r["input_required"] === true)).toBe(true);

    // the same retry again: the request is decided, so the state is refused
    const replay = await rawCall(url, "get_agent_task", { task_id: taskId }, retryOf(form, { action: "accept", content: { decision: "deny" } }), 3);
    expect(replay["error"]).toMatchObject({ code: -32602 });
    expect(String((replay["error"] as Json)["message"])).toStartWith("REQUEST_STATE_INVALID: ");
    expect((await bridgeTask(taskId, ended))["final_response"]).toBe("approval=approve_once");
  });

  test("read_agent_task_events asks too, and its retry's page shows the decision", async () => {
    const taskId = await submitRaw(url, "approval:echo events");
    const args = { task_id: taskId, after_event_id: 0, limit: 500 };
    const form = await formOf(url, taskId, "read_agent_task_events", args);
    expect(form.result["resultType"]).toBe("input_required");
    const answer = await rawCall(url, "read_agent_task_events", args, retryOf(form, { action: "accept", content: { decision: "deny" } }), 2);
    const events = (resultOf(answer)["structuredContent"] as { events: Json[] }).events;
    expect(events.some((e) => e["event_type"] === "approval.resolved")).toBe(true);
  });

  test("a forged, an altered, another task's and another tool's requestState are refused and decide nothing", async () => {
    const taskId = await submitRaw(url, "approval:echo tampered");
    const other = await submitRaw(url, "approval:echo other");
    const form = await formOf(url, taskId);
    const otherForm = await formOf(url, other);
    const state = String(form.result["requestState"]);
    // the next-to-last character: base64url's last one may carry only padding bits, and a change there can
    // decode to the same bytes (the same state, written otherwise; it failed this test 1 run in 16)
    const altered = `${state.slice(0, -2)}${state.at(-2) === "A" ? "B" : "A"}${state.at(-1)}`;
    const attempts: [string, Json][] = [
      ["forged", retryOf(form, APPROVE, "v1.eyJwIjp7fX0.AAAA")],
      ["altered", retryOf(form, APPROVE, altered)],
      ["appended", retryOf(form, APPROVE, `${state}-TAMPERED`)],
      ["another task's", retryOf({ ...otherForm, requestId: form.requestId }, APPROVE)],
      ["without state", { inputResponses: { [form.requestId]: APPROVE } }],
    ];
    for (const [what, retry] of attempts) {
      const answer = await rawCall(url, "get_agent_task", { task_id: taskId }, retry, 9);
      expect({ what, code: (answer["error"] as Json | undefined)?.["code"] }).toEqual({ what, code: -32602 });
      expect(String((answer["error"] as Json)["message"])).toStartWith("REQUEST_STATE_INVALID: ");
    }
    const anotherTool = await rawCall(url, "read_agent_task_events", { task_id: taskId, after_event_id: 0 }, retryOf(form, APPROVE), 10);
    expect(String((anotherTool["error"] as Json)["message"])).toContain("another task or tool");
    expect(await decided(taskId)).toBe(false);
    expect(await decided(other)).toBe(false);
    expect((await call<Json>(env.socketPath, "task.get", { task_id: taskId }))["status"]).toBe("waiting_for_approval");
    await call(env.socketPath, "task.cancel", { task_id: taskId });
    await call(env.socketPath, "task.cancel", { task_id: other });
  });

  test("two retries racing with one state: exactly one decides, the other is refused", async () => {
    const taskId = await submitRaw(url, "approval:echo race");
    const form = await formOf(url, taskId);
    const answers = await Promise.all([
      rawCall(url, "get_agent_task", { task_id: taskId }, retryOf(form, APPROVE), 2),
      rawCall(url, "get_agent_task", { task_id: taskId }, retryOf(form, { action: "accept", content: { decision: "deny" } }), 3),
    ]);
    const refusals = answers.map((a) => {
      if (a["error"]) return String((a["error"] as Json)["message"]).split(":")[0];
      const result = resultOf(a);
      return result["isError"] ? String(((result["content"] as Json[])[0] as Json)["text"]).split(":")[0] : null;
    });
    expect(refusals.filter((r) => r === null)).toHaveLength(1);
    expect(["REQUEST_STATE_INVALID", "REQUEST_STALE", "REQUEST_ALREADY_RESOLVED"]).toContain(refusals.find((r) => r !== null)!);
    const done = await bridgeTask(taskId, ended);
    expect(["approval=approve_once", "approval=deny"]).toContain(String(done["final_response"]));
  });

  test("the key is one 0600 file of 32 bytes in the Bridge's state directory", () => {
    const st = statSync(join(env.stateDir, "mcp-request-state.key"));
    expect(st.mode & 0o777).toBe(0o600);
    expect(st.size).toBe(32);
  });
});

describe("the retry needs nothing of the process that asked", () => {
  test("another process answers it, and so does a restarted one", async () => {
    const first = await startHttp(env.configPath);
    const second = await startHttp(env.configPath);
    const taskA = await submitRaw(first.url, "approval:echo elsewhere");
    const formA = await formOf(first.url, taskA);
    const answer = await rawCall(second.url, "get_agent_task", { task_id: taskA }, retryOf(formA, APPROVE), 2);
    expect(resultOf(answer)["isError"]).toBeFalsy();
    expect((await bridgeTask(taskA, ended))["final_response"]).toBe("approval=approve_once");

    const taskB = await submitRaw(first.url, "approval:echo restarted");
    const formB = await formOf(first.url, taskB);
    first.proc.kill("SIGTERM");
    second.proc.kill("SIGTERM");
    await Promise.all([first.proc.exited, second.proc.exited]);
    const restarted = await startHttp(env.configPath);
    const late = await rawCall(restarted.url, "get_agent_task", { task_id: taskB }, retryOf(formB, { action: "accept", content: { decision: "deny" } }), 3);
    expect(resultOf(late)["isError"]).toBeFalsy();
    expect((await bridgeTask(taskB, ended))["final_response"]).toBe("approval=deny");
  });
});

describe("an expired requestState", () => {
  test("is refused once its request's expiry has passed, and decides nothing", async () => {
    const short = bridgeEnv({ config: BOTH, lifecycle: { interaction_timeout_seconds: 2 } });
    const shortBridge = await startBridgeProcess(short);
    try {
      const { url } = await startHttp(short.configPath);
      const taskId = await submitRaw(url, "approval:echo expiring");
      const answer = await rawCall(url, "get_agent_task", { task_id: taskId });
      let form = { result: resultOf(answer), requestId: "" };
      if (form.result["resultType"] !== "input_required") {
        // the task had not asked yet: ask again once it waits
        await poll(async () => waiting(await call<Json>(short.socketPath, "task.get", { task_id: taskId })), 20_000, "the approval");
        form = { result: resultOf(await rawCall(url, "get_agent_task", { task_id: taskId })), requestId: "" };
      }
      form.requestId = Object.keys(form.result["inputRequests"] as Json)[0]!;
      await poll(async () => !waiting(await call<Json>(short.socketPath, "task.get", { task_id: taskId })), 20_000, "the request's expiry");
      const late = await rawCall(url, "get_agent_task", { task_id: taskId }, retryOf(form, APPROVE), 2);
      expect(late["error"]).toMatchObject({ code: -32602 });
      expect(String((late["error"] as Json)["message"])).toStartWith("REQUEST_STATE_INVALID: the requestState is refused: it has expired");
      const page = await call<{ events: Json[] }>(short.socketPath, "task.events", { task_id: taskId, after_event_id: 0, limit: 500 });
      expect(page.events.some((e) => e["event_type"] === "approval.resolved" && (e["payload"] as Json)["decision"] === "approve_once")).toBe(false);
    } finally {
      await shortBridge.stop();
      short.dir.remove();
    }
  });
});

describe("without a usable key", () => {
  test("a key file others may read: no form is asked (a warning says why), and a retry is refused", async () => {
    const key = join(env.stateDir, "mcp-request-state.key");
    const { url: asking } = await startHttp(env.configPath);
    const taskId = await submitRaw(asking, "approval:echo keyless");
    const form = await formOf(asking, taskId);
    expect(form.result["resultType"]).toBe("input_required");
    chmodSync(key, 0o644);
    try {
      const fresh = await startHttp(env.configPath);
      const plain = await rawCall(fresh.url, "get_agent_task", { task_id: taskId });
      expect(resultOf(plain)["resultType"]).toBe("complete");
      expect(structuredOf(plain)["status"]).toBe("waiting_for_approval");
      await poll(() => fresh.audit().some((r) => r["event"] === "request_state_key_unavailable" && String(r["reason"]).includes("mode 0644")));
      const retry = await rawCall(fresh.url, "get_agent_task", { task_id: taskId }, retryOf(form, APPROVE), 2);
      expect(String((retry["error"] as Json)["message"])).toStartWith("REQUEST_STATE_INVALID: the requestState is refused: this server has no key");
      expect(await decided(taskId)).toBe(false);
      expect(statSync(key).mode & 0o777).toBe(0o644);
    } finally {
      chmodSync(key, 0o600);
      await call(env.socketPath, "task.cancel", { task_id: taskId });
    }
  });
});
