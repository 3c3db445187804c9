/**
 * Agent fidelity on the real Codex CLI, end to end: the scripted Responses mock, `codex app-server`, a
 * real `serverfs bridge` and a real `serverfs mcp` driven through the MCP SDK's Client
 * (test/fixtures/agent-stack.ts). Every approval and question is answered through the MCP Agent tools,
 * and the mock checks what reached the model (docs/agent-requests.md, docs/reliability.md "Agent
 * fidelity").
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type AgentStack, CODEX_BIN, CODEX_PRESENT, cliMissing, startAgentStack } from "../fixtures/agent-stack.ts";
import { type MockOpenAI, type MockStep, startMockOpenAI } from "../fixtures/mock-openai.ts";
import type { Table } from "../helpers/toml.ts";
import type { Json } from "../e2e/support.ts";

if (!CODEX_PRESENT) cliMissing("Codex", CODEX_BIN, "npm install --no-save @openai/codex@0.171.0");

const stacks: AgentStack[] = [];
const mocks: MockOpenAI[] = [];
afterEach(async () => {
  for (const s of stacks.splice(0)) await s.stop();
  for (const m of mocks.splice(0)) m.stop();
});

async function stack(steps: MockStep[], runtimeConfig: Table = {}, lifecycle?: Table): Promise<{ s: AgentStack; mock: MockOpenAI }> {
  const mock = startMockOpenAI(steps);
  mocks.push(mock);
  const s = await startAgentStack({ runtime: "codex", mock, runtimeConfig, ...(lifecycle ? { lifecycle } : {}) });
  stacks.push(s);
  return { s, mock };
}

const UNTRUSTED = { approval_policy: "untrusted" };
const done = (say: string): MockStep => ({ say, phase: "final_answer" });

/** The workdir's entries and file contents, to prove a run changed nothing. */
function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const e of readdirSync(join(root, rel), { withFileTypes: true })) {
      const p = rel === "" ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) {
        out[`${p}/`] = "";
        walk(p);
      } else out[p] = readFileSync(join(root, p), "utf8");
    }
  };
  walk("");
  return out;
}

/** A human who approves everything: answers every request of the task with approve_once until it ends. */
async function approveEverything(s: AgentStack, taskId: string): Promise<{ task: Json; asked: number }> {
  let asked = 0;
  for (;;) {
    const task = await s.finishOrAsk(taskId);
    if (task["pending_request"] == null) return { task, asked };
    asked++;
    expect(await s.respond(taskId, task["pending_request"] as Json, "approve_once")).toBeNull();
  }
}

describe.skipIf(!CODEX_PRESENT)("item 1: a review task never changes the workdir, whatever [runtimes.codex] says", () => {
  const ADD = "*** Begin Patch\n*** Add File: added.txt\n+hello\n*** End Patch\n";
  const UPDATE = "*** Begin Patch\n*** Update File: README.md\n@@\n-# demo\n+# changed by a review\n*** End Patch\n";
  const cases: [string, MockStep, RegExp][] = [
    ["a command write", { exec: "echo x > written.txt" }, /read-only|rejected|denied/i],
    ["a patch add", { patch: ADD }, /rejected|read-only/i],
    ["a patch update", { patch: UPDATE }, /rejected|read-only/i],
    ["an escalated exec", { exec: "echo y > escalated.txt", escalate: true, justification: "need to write" }, /reject|never/i],
  ];
  for (const [name, step, told] of cases) {
    test(`${name}: the workdir is unchanged even when a human approves everything`, async () => {
      const { s, mock } = await stack([step, done("reviewed")], { ...UNTRUSTED, sandbox: "workspace-write" });
      const before = snapshot(s.workspace);
      const taskId = await s.submit({ profile: "review", prompt: "review this" });
      const { task, asked } = await approveEverything(s, taskId);
      expect(task).toMatchObject({ status: "succeeded", final_response: "reviewed" });
      expect(snapshot(s.workspace)).toEqual(before);
      // the model was told its action was refused, and no human was asked to allow it
      expect(mock.toolOutput("call_0")).toMatch(told);
      expect(asked).toBe(0);
    }, 60_000);
  }
});

describe.skipIf(!CODEX_PRESENT)("item 2: every decision is offered", () => {
  test("a command approval offers deny; deny declines the command, the model is told, and the turn goes on", async () => {
    const { s, mock } = await stack([{ exec: "echo x > denied.txt" }, done("not run")], UNTRUSTED);
    const taskId = await s.submit({ prompt: "write a file" });
    const request = await s.pending(taskId);
    const payload = request["payload"] as Json;
    expect(payload["category"]).toBe("command");
    expect(payload["available_decisions"]).toContain("deny");
    expect(await s.respond(taskId, request, "deny")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "not run" });
    expect(existsSync(join(s.workspace, "denied.txt"))).toBe(false);
    expect(mock.toolOutput("call_0")).toMatch(/rejected by user/);
    const events = await s.events(taskId);
    expect(events.find((e) => e["event_type"] === "approval.resolved")?.["payload"]).toEqual({ decision: "deny" });
  }, 60_000);

  test("a file-change approval offers deny; deny leaves the file alone and the model is told", async () => {
    const patch = "*** Begin Patch\n*** Add File: refused.txt\n+no\n*** End Patch\n";
    const { s, mock } = await stack([{ patch }, done("left alone")], UNTRUSTED);
    const taskId = await s.submit({ prompt: "add a file" });
    const request = await s.pending(taskId);
    expect(request["payload"]).toMatchObject({ category: "file_change" });
    const offered = (request["payload"] as Json)["available_decisions"] as string[];
    expect(offered.length === 0 || offered.includes("deny")).toBe(true);
    expect(await s.respond(taskId, request, "deny")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "left alone" });
    expect(existsSync(join(s.workspace, "refused.txt"))).toBe(false);
    expect(mock.toolOutput("call_0")).toMatch(/rejected by user/);
  }, 60_000);

  test("INVALID_APPROVAL_DECISION names the decisions offered", async () => {
    const { s } = await stack([{ exec: "echo x" }, done("fine")], UNTRUSTED);
    const taskId = await s.submit({ prompt: "echo" });
    const request = await s.pending(taskId);
    const offered = (request["payload"] as Json)["available_decisions"] as string[];
    expect(offered).not.toContain("approve_session");
    const r = await s.mcp.call("respond_agent_approval", { task_id: taskId, request_id: request["request_id"], decision: "approve_session" });
    const text = (r.content[0] as { text: string }).text;
    expect(text).toStartWith("INVALID_APPROVAL_DECISION: ");
    for (const d of offered) expect(text).toContain(d);
    expect(await s.respond(taskId, request, "deny")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded" });
  }, 60_000);
});

describe.skipIf(!CODEX_PRESENT)("item 5: a continuation right after success", () => {
  test("each continuation submitted as soon as its predecessor succeeded is accepted, and the model sees the history", async () => {
    const { s, mock } = await stack([done("answer one"), done("answer two"), done("answer three")]);
    let prior = await s.submit({ prompt: "prompt one" });
    expect(await s.finish(prior)).toMatchObject({ status: "succeeded", final_response: "answer one" });
    for (const [prompt, answer] of [
      ["prompt two", "answer two"],
      ["prompt three", "answer three"],
    ] as const) {
      // no pause: the predecessor's finally path may still hold the lease
      const next = await s.submit({ prompt, continue_from_task_id: prior });
      expect(await s.finish(next)).toMatchObject({ status: "succeeded", final_response: answer });
      prior = next;
    }
    const history = JSON.stringify(mock.requests.at(-1)!.body["input"]);
    for (const seen of ["prompt one", "answer one", "prompt two", "answer two", "prompt three"]) expect(history).toContain(seen);
  }, 90_000);
});

describe.skipIf(!CODEX_PRESENT)("item 7: silence while an approved command runs is not a disconnect", () => {
  test("an approved `sleep 6` with event_idle_timeout_seconds = 3 succeeds", async () => {
    const { s, mock } = await stack([{ exec: "sleep 6; echo slept-well" }, done("woke up")], { ...UNTRUSTED, event_idle_timeout_seconds: 3 });
    const taskId = await s.submit({ prompt: "sleep" });
    const request = await s.pending(taskId);
    const approvedAt = Date.now();
    expect(await s.respond(taskId, request, "approve_once")).toBeNull();
    expect(await s.finish(taskId, 60_000)).toMatchObject({ status: "succeeded", final_response: "woke up" });
    expect(Date.now() - approvedAt).toBeGreaterThanOrEqual(5_000);
    expect(mock.toolOutput("call_0")).toContain("slept-well");
  }, 90_000);
});
