/**
 * Elicitation end to end (docs/elicitation.md): a real `serverfs bridge` with the fake runtime and
 * real `serverfs mcp` processes, driven by SDK Clients that declare form elicitation and answer the
 * forms in their handler. One Bridge serves the file; most tasks run as `review` (no writer lease).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { CancelledNotificationSchema, type ElicitRequest, ElicitRequestSchema, type ElicitResult, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import { type BridgeEnv, type BridgeProcess, bridgeEnv, startBridgeProcess } from "../helpers/bridge.ts";
import { type McpSession, startStdio, structured } from "../helpers/mcp-client.ts";
import { poll } from "../helpers/poll.ts";
import { eventually, hasStatus, isTerminal, type Json, ok, startHttp, submit, waitForTask } from "./support.ts";

type Form = ElicitRequest["params"];
/** The properties of a form-mode request (the only mode ServerFS sends). */
const propertiesOf = (form: Form): Record<string, Json> => ("requestedSchema" in form ? (form.requestedSchema.properties as Record<string, Json>) : {});
type Answer = (form: Form) => Promise<ElicitResult> | ElicitResult;

/**
 * A session whose forms are answered by `answer` (settable per test) and recorded in `forms`, with the
 * JSON-RPC id of each (`formIds`) and the ids the server cancelled (`cancelledIds`, seen on the wire:
 * the SDK's client ignores a cancellation of request id 0, the first form of an HTTP session).
 */
interface Asked {
  session: McpSession;
  forms: Form[];
  formIds: RequestId[];
  cancelledIds: Set<RequestId>;
  answer: Answer;
}

function asked(session: McpSession): Asked {
  const out: Asked = { session, forms: [], formIds: [], cancelledIds: new Set(), answer: () => ({ action: "cancel" }) };
  session.client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
    out.forms.push(request.params);
    out.formIds.push(extra.requestId);
    return out.answer(request.params);
  });
  const transport = session.client.transport!;
  const deliver = transport.onmessage!;
  transport.onmessage = (message, extra) => {
    const cancelled = CancelledNotificationSchema.safeParse(message);
    if (cancelled.success && cancelled.data.params.requestId !== undefined) out.cancelledIds.add(cancelled.data.params.requestId);
    deliver(message, extra);
  };
  return out;
}

/**
 * A human who never answers. `opened` resolves when a form arrives; `cancelled()` tells whether the
 * server cancelled every form shown since.
 */
function neverAnswers(target: Asked): { opened: Promise<void>; cancelled(): boolean } {
  const first = target.formIds.length;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  target.answer = () => {
    open();
    return new Promise<ElicitResult>(() => {});
  };
  return {
    opened,
    cancelled: () => target.formIds.length > first && target.formIds.slice(first).every((id) => target.cancelledIds.has(id)),
  };
}

// two cores shared with other suites: the bounds are generous
setDefaultTimeout(60_000);

let env: BridgeEnv;
let bridge: BridgeProcess;
let a: Asked;
let b: Asked;
let plain: McpSession;
const closing: McpSession[] = [];

const approvalTask = (s: McpSession, cmd: string) => submit(s, { profile: "review", prompt: `approval:${cmd}` });
const answers = (s: McpSession) => s.audit().filter((r) => r["event"] === "agent_elicitation_answered");

beforeAll(async () => {
  env = bridgeEnv();
  bridge = await startBridgeProcess(env);
  a = asked(await startStdio(env.configPath, {}, [], { elicitation: {} }));
  b = asked(await startStdio(env.configPath, {}, [], { elicitation: {} }));
  plain = await startStdio(env.configPath);
  closing.push(a.session, b.session, plain);
});

afterAll(async () => {
  for (const s of closing) await s.close().catch(() => {});
  await bridge.stop();
  env.dir.remove();
});

describe("elicitation over stdio", () => {
  test("accept: the task goes on with the chosen decision; the form shows the command and offers the decisions", async () => {
    a.forms.length = 0;
    a.answer = () => ({ action: "accept", content: { decision: "approve_once" } });
    const id = await approvalTask(a.session, "echo elicited-accept");
    const task = await waitForTask(a.session, id, isTerminal);
    expect(task["status"]).toBe("succeeded");
    expect(task["final_response"]).toBe("approval=approve_once");
    expect(a.forms).toHaveLength(1);
    const form = a.forms[0] as Json & { message: string; requestedSchema: { properties: Record<string, Json>; required: string[] } };
    expect(form.message).toContain("echo elicited-accept");
    expect(form.message).toContain(id);
    expect(form.requestedSchema.properties["decision"]!["enum"]).toEqual(["approve_once", "approve_session", "deny", "cancel_task"]);
    expect(form.requestedSchema.required).toEqual(["decision"]);
    await eventually(() => answers(a.session).some((r) => r["task_id"] === id && r["outcome"] === "resolved" && r["decision"] === "approve_once"));
    const line = answers(a.session).find((r) => r["task_id"] === id)!;
    expect(JSON.stringify(line)).not.toContain("elicited-accept");
  });

  test("decline and cancel leave the request pending; a later call asks again; respond_agent_approval still works", async () => {
    a.forms.length = 0;
    a.answer = () => ({ action: "decline" });
    const id = await approvalTask(a.session, "echo elicited-decline");
    const waiting = await waitForTask(a.session, id, hasStatus("waiting_for_approval"));
    const asks = a.forms.length;
    expect(asks).toBeGreaterThanOrEqual(1);
    a.answer = () => ({ action: "cancel" });
    const again = await ok(a.session, "get_agent_task", { task_id: id });
    expect(again["status"]).toBe("waiting_for_approval");
    expect(a.forms.length).toBe(asks + 1);
    const requestId = String((waiting["pending_request"] as Json)["request_id"]);
    await ok(a.session, "respond_agent_approval", { task_id: id, request_id: requestId, decision: "deny" });
    a.answer = () => {
      throw new Error("a resolved request is never asked");
    };
    const done = await waitForTask(a.session, id, isTerminal);
    expect(done["final_response"]).toBe("approval=deny");
    await eventually(() =>
      ["decline", "cancel"].every((act) => answers(a.session).some((r) => r["task_id"] === id && r["action"] === act && r["outcome"] === "pending")),
    );
  });

  test("lost race: answered in another session while the form is open; no error, the call answers the state", async () => {
    const id = await approvalTask(a.session, "echo elicited-race");
    // b did not submit the task, so following it there asks nobody
    await waitForTask(b.session, id, hasStatus("waiting_for_approval"));
    a.answer = async () => {
      const task = await ok(b.session, "get_agent_task", { task_id: id });
      const requestId = String((task["pending_request"] as Json)["request_id"]);
      await ok(b.session, "respond_agent_approval", { task_id: id, request_id: requestId, decision: "deny" });
      return { action: "accept", content: { decision: "approve_once" } };
    };
    const result = await a.session.call("get_agent_task", { task_id: id });
    expect(result.isError).toBeFalsy();
    a.answer = () => ({ action: "cancel" });
    const done = await waitForTask(a.session, id, isTerminal);
    expect(done["final_response"]).toBe("approval=deny");
    await eventually(() => answers(a.session).some((r) => r["task_id"] === id && r["outcome"] === "stale"));
  });

  test("a task another session submitted is never asked; a client without the capability is never asked", async () => {
    b.forms.length = 0;
    a.forms.length = 0;
    const id = await approvalTask(a.session, "echo elicited-other");
    a.answer = () => ({ action: "decline" });
    await waitForTask(a.session, id, hasStatus("waiting_for_approval"));
    const seen = await ok(b.session, "get_agent_task", { task_id: id });
    expect(seen["status"]).toBe("waiting_for_approval");
    await ok(b.session, "read_agent_task_events", { task_id: id, after_event_id: 0 });
    expect(b.forms).toHaveLength(0);

    const own = await approvalTask(plain, "echo elicited-plain");
    const task = await waitForTask(plain, own, hasStatus("waiting_for_approval"));
    const requestId = String((task["pending_request"] as Json)["request_id"]);
    await ok(plain, "respond_agent_approval", { task_id: own, request_id: requestId, decision: "approve_once" });
    expect((await waitForTask(plain, own, isTerminal))["final_response"]).toBe("approval=approve_once");
    // a form tried at a client without the capability would still leave its audit line
    expect(answers(plain)).toHaveLength(0);
    await ok(a.session, "cancel_agent_task", { task_id: id });
  });

  test("a question: options as an enum and free text; the answer maps back to option ids", async () => {
    a.forms.length = 0;
    a.answer = (form) => {
      const choices = propertiesOf(form)["answer_1"]!["enum"] as string[];
      return { action: "accept", content: { answer_1: choices[0]!, text_1: "typed by the human" } };
    };
    const id = await submit(a.session, { profile: "review", prompt: "question:which one?" });
    const task = await waitForTask(a.session, id, isTerminal);
    expect(a.forms).toHaveLength(1);
    expect(a.forms[0]!.message).toContain("which one?");
    const props = propertiesOf(a.forms[0]!);
    expect(props["answer_1"]!["type"]).toBe("string");
    expect(props["text_1"]!["type"]).toBe("string");
    expect(String(task["final_response"])).toContain('"selected_option_ids":["a"]');
    expect(String(task["final_response"])).toContain("typed by the human");
  });

  test("read_agent_task_events asks too, and its page shows the answer's effect", async () => {
    a.answer = () => ({ action: "accept", content: { decision: "deny" } });
    const id = await approvalTask(a.session, "echo elicited-events");
    let cursor = 0;
    const types: string[] = [];
    for (let i = 0; i < 50 && !types.includes("approval.resolved"); i++) {
      const page = await ok<{ events: Json[]; next_after_event_id: number }>(a.session, "read_agent_task_events", {
        task_id: id,
        after_event_id: cursor,
        wait_ms: 2000,
      });
      types.push(...page.events.map((e) => String(e["event_type"])));
      cursor = page.next_after_event_id;
    }
    expect(types).toContain("approval.requested");
    expect(types).toContain("approval.resolved");
    expect((await waitForTask(a.session, id, isTerminal))["final_response"]).toBe("approval=deny");
  });
});

describe("forms stay in their session and go away when answered elsewhere", () => {
  test("a session that replays the submit with the same idempotency_key gets the task but is never shown its form", async () => {
    a.answer = () => ({ action: "decline" });
    b.forms.length = 0;
    b.answer = () => ({ action: "accept", content: { decision: "approve_once" } });
    const args = { runtime: "fake", workdir: "repo", profile: "review", prompt: "approval:echo elicited-replay", idempotency_key: "elicit-replay-1" };
    const id = (await ok<{ task_id: string }>(a.session, "submit_agent_task", args)).task_id;
    await waitForTask(a.session, id, hasStatus("waiting_for_approval"));
    const replay = await ok<Json>(b.session, "submit_agent_task", args);
    expect(replay["task_id"]).toBe(id);
    expect(Object.keys(replay).sort()).toEqual(["correlation_id", "idempotency_key", "status", "task_id"]);
    expect((await ok(b.session, "get_agent_task", { task_id: id }))["status"]).toBe("waiting_for_approval");
    await ok(b.session, "read_agent_task_events", { task_id: id, after_event_id: 0 });
    expect(b.forms).toHaveLength(0);
    expect((await ok(a.session, "get_agent_task", { task_id: id }))["status"]).toBe("waiting_for_approval");
    expect(answers(b.session)).toHaveLength(0);
    await ok(a.session, "cancel_agent_task", { task_id: id });
  });

  test("answered in another session while the form is open: the blocked call returns with the task's state, and the client sees the form cancelled", async () => {
    const human = neverAnswers(a);
    const id = await approvalTask(a.session, "echo elicited-withdrawn");
    const waiting = await waitForTask(b.session, id, hasStatus("waiting_for_approval"));
    const blocked = a.session.call("get_agent_task", { task_id: id });
    await human.opened;
    const requestId = String((waiting["pending_request"] as Json)["request_id"]);
    await ok(b.session, "respond_agent_approval", { task_id: id, request_id: requestId, decision: "deny" });
    const result = await blocked;
    expect(result.isError).toBeFalsy();
    const task = result.structuredContent as Json;
    expect(task["pending_request"] ?? null).toBeNull();
    await poll(() => human.cancelled(), 10_000, "the client saw the form cancelled");
    await eventually(() => answers(a.session).some((r) => r["task_id"] === id && r["action"] === "withdrawn" && r["outcome"] === "stale"));
    a.answer = () => ({ action: "cancel" });
    expect((await waitForTask(a.session, id, isTerminal))["final_response"]).toBe("approval=deny");
  });

  test("the task cancelled while the form is open: the blocked call returns the cancelled task", async () => {
    const human = neverAnswers(a);
    const id = await approvalTask(a.session, "echo elicited-cancelled");
    await waitForTask(b.session, id, hasStatus("waiting_for_approval"));
    const blocked = a.session.call("get_agent_task", { task_id: id });
    await human.opened;
    await ok(b.session, "cancel_agent_task", { task_id: id });
    const result = await blocked;
    expect(result.isError).toBeFalsy();
    expect((result.structuredContent as Json)["status"]).toBe("cancelled");
    await poll(() => human.cancelled(), 10_000, "the client saw the form cancelled");
    a.answer = () => ({ action: "cancel" });
  });

  test("the request expires while the form is open: the blocked call returns the interrupted task", async () => {
    const expiring = bridgeEnv({ lifecycle: { interaction_timeout_seconds: 1 } });
    const own = await startBridgeProcess(expiring);
    try {
      const s = asked(await startStdio(expiring.configPath, {}, [], { elicitation: {} }));
      closing.push(s.session);
      const human = neverAnswers(s);
      const id = await approvalTask(s.session, "echo elicited-expired");
      // followed the way a client does, until the call that shows the form (the request lives 1 s)
      let cursor = 0;
      for (;;) {
        const call = s.session.call("read_agent_task_events", { task_id: id, after_event_id: cursor, wait_ms: 1000 });
        if (await Promise.race([human.opened.then(() => true), call.then(() => false)])) {
          expect((await call).isError).toBeFalsy();
          break;
        }
        cursor = structured<{ next_after_event_id: number }>(await call).next_after_event_id;
      }
      await poll(() => human.cancelled(), 10_000, "the client saw the form cancelled");
      expect(await ok(s.session, "get_agent_task", { task_id: id })).toMatchObject({ status: "interrupted", error_code: "AGENT_INTERACTION_TIMED_OUT" });
    } finally {
      await own.stop();
      expiring.dir.remove();
    }
  });

  test("over Streamable HTTP a session blocked on a form answered elsewhere is released, so the session cap can evict it", async () => {
    const capped = `${env.dir.path}/elicitation-cap.toml`;
    writeFileSync(capped, `${readFileSync(env.configPath, "utf8")}\n[server]\nhttp_max_sessions = 1\n`);
    const served = await startHttp(capped, { elicitation: {} });
    const http = asked(served);
    closing.push(served);
    const human = neverAnswers(http);
    const id = await approvalTask(http.session, "echo elicited-cap");
    const waiting = await waitForTask(b.session, id, hasStatus("waiting_for_approval"));
    const blocked = http.session.call("get_agent_task", { task_id: id });
    await human.opened;
    const requestId = String((waiting["pending_request"] as Json)["request_id"]);
    await ok(b.session, "respond_agent_approval", { task_id: id, request_id: requestId, decision: "approve_once" });
    expect((await blocked).isError).toBeFalsy();
    await poll(() => human.cancelled(), 10_000, "the client saw the form cancelled");
    // the only session is idle now: a new one takes its place
    const initialize = () =>
      fetch(`http://127.0.0.1:${served.port}/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
        }),
      }).then(async (r) => {
        await r.text();
        return r.status;
      });
    await poll(async () => (await initialize()) === 200, 10_000, "a new session admitted past the cap");
    await eventually(() => http.session.audit().some((r) => r["event"] === "http_session_closed" && r["reason"] === "cap"));
  });
});

describe("elicitation elsewhere", () => {
  test("over Streamable HTTP the form goes out on the call's own stream", async () => {
    const http = asked(await startHttp(env.configPath, { elicitation: {} }));
    closing.push(http.session);
    http.answer = () => ({ action: "accept", content: { decision: "approve_once" } });
    const id = await approvalTask(http.session, "echo elicited-http");
    const task = await waitForTask(http.session, id, isTerminal);
    expect(task["final_response"]).toBe("approval=approve_once");
    expect(http.forms).toHaveLength(1);
  });

  test("[server] elicitation = false: never asked", async () => {
    const off = `${env.dir.path}/elicitation-off.toml`;
    writeFileSync(off, `${readFileSync(env.configPath, "utf8")}\n[server]\nelicitation = false\n`);
    const s = asked(await startStdio(off, {}, [], { elicitation: {} }));
    closing.push(s.session);
    const id = await approvalTask(s.session, "echo elicited-off");
    const task = await waitForTask(s.session, id, hasStatus("waiting_for_approval"));
    await ok(s.session, "get_agent_task", { task_id: id });
    expect(s.forms).toHaveLength(0);
    const requestId = String((task["pending_request"] as Json)["request_id"]);
    await ok(s.session, "respond_agent_approval", { task_id: id, request_id: requestId, decision: "approve_once" });
    expect((await waitForTask(s.session, id, isTerminal))["final_response"]).toBe("approval=approve_once");
  });
});
