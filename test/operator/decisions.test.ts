/**
 * `serverfs tasks approve|deny|answer|cancel` (docs/cli.md#deciding-from-the-shell): the real CLI against
 * one real Bridge with the fake runtime. Each decision goes through the Bridge's own calls, is audited
 * with the actor `operator`, and one that cannot be made exits 1 with its code.
 */
import { describe, expect, test } from "bun:test";
import { call, isTerminalTask, rpc } from "../helpers/bridge.ts";
import { runCli } from "../helpers/process.ts";
import { type Task, useBridge } from "../helpers/use-bridge.ts";

const fixture = useBridge();
const { env, sock } = fixture;
const tasks = (...args: string[]) => runCli(["tasks", ...args, "--config", env.configPath]);

const waiting = (status: string) => (t: Task) => t["status"] === status;
const pendingId = (t: Task) => (t["pending_request"] as { request_id: string }).request_id;

async function started(prompt: string, status: string): Promise<Task> {
  const id = await fixture.submit({ prompt });
  return fixture.waitFor(id, waiting(status));
}

const answeredBy = (taskId: string) => fixture.bridge().nextLine("request_answered", { since: 0, where: (l) => l["task_id"] === taskId });

describe("tasks approve / deny", () => {
  test("approve answers the pending approval once: the task goes on, the Bridge audits the operator", async () => {
    const task = await started("approval:make build", "waiting_for_approval");
    const r = await tasks("approve", String(task["task_id"]));
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`approve_once for approval ${pendingId(task)} of task ${task["task_id"]}\n`);
    const done = await fixture.waitFor(String(task["task_id"]), isTerminalTask);
    expect(done["final_response"]).toBe("approval=approve_once");
    const line = await answeredBy(String(task["task_id"]));
    expect(line).toMatchObject({ decision: "approve_once", actor: "operator", kind: "approval" });
  });

  test("approve --session --json prints one document with the decision", async () => {
    const task = await started("approval:make test", "waiting_for_approval");
    const r = await tasks("approve", String(task["task_id"]), "--session", "--json");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ task_id: task["task_id"], request_id: pendingId(task), decision: "approve_session", actor: "operator" });
    expect((await fixture.waitFor(String(task["task_id"]), isTerminalTask))["final_response"]).toBe("approval=approve_session");
  });

  test("deny; then a second answer finds nothing pending and exits 1 with REQUEST_NOT_FOUND", async () => {
    const task = await started("approval:rm -rf build", "waiting_for_approval");
    const id = String(task["task_id"]);
    const r = await tasks("deny", id);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("deny for approval");
    expect((await fixture.waitFor(id, isTerminalTask))["final_response"]).toBe("approval=deny");
    const again = await tasks("approve", id);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe("");
    expect(again.stderr).toBe(`serverfs: REQUEST_NOT_FOUND: task ${id} has no pending request (it is succeeded)\n`);
  });

  test("--session on a file change that does not offer it is the Bridge's INVALID_APPROVAL_DECISION", async () => {
    const task = await started("file-change:notes.txt:hello", "waiting_for_approval");
    const r = await tasks("approve", String(task["task_id"]), "--session");
    expect(r.code).toBe(1);
    expect(r.stderr).toStartWith("serverfs: INVALID_APPROVAL_DECISION: ");
    expect((await tasks("approve", String(task["task_id"]))).code).toBe(0);
    expect((await fixture.waitFor(String(task["task_id"]), isTerminalTask))["final_response"]).toBe("file_change=approve_once");
  });

  test("an unknown task is AGENT_TASK_NOT_FOUND, exit 1", async () => {
    const r = await tasks("approve", "agt_000000000000000000000000");
    expect(r.code).toBe(1);
    expect(r.stderr).toStartWith("serverfs: AGENT_TASK_NOT_FOUND: ");
  });
});

describe("tasks answer", () => {
  test("answers the pending question with the chosen option; approve on a question says how to answer it", async () => {
    const task = await started("question:which one?", "waiting_for_question");
    const id = String(task["task_id"]);
    const wrong = await tasks("approve", id);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain("INVALID_APPROVAL_DECISION");
    expect(wrong.stderr).toContain("serverfs tasks answer");
    const bad = await tasks("answer", id, "q1=zzz");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toStartWith("serverfs: INVALID_QUESTION_ANSWER: ");
    const r = await tasks("answer", id, "q1=b", "--json");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      task_id: id,
      request_id: pendingId(task),
      answers: [{ question_id: "q1", selected_option_ids: ["b"] }],
      actor: "operator",
    });
    const done = await fixture.waitFor(id, isTerminalTask);
    expect(String(done["final_response"])).toContain('"selected_option_ids":["b"]');
    expect(await answeredBy(id)).toMatchObject({ kind: "question", actor: "operator" });
  });

  test("a word that is not QUESTION_ID=OPTION_ID is a usage error (exit 2)", async () => {
    const r = await tasks("answer", "agt_000000000000000000000000", "q1");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('"q1" is not QUESTION_ID=OPTION_ID');
  });
});

describe("tasks cancel", () => {
  test("cancels a waiting task, audited as the operator; a second cancel exits 1 with AGENT_TASK_TERMINAL", async () => {
    const task = await started("approval:sleep 100", "waiting_for_approval");
    const id = String(task["task_id"]);
    const r = await tasks("cancel", id, "--json");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ task_id: id, status: "cancelled", actor: "operator" });
    expect((await call(sock, "task.get", { task_id: id }))["status"]).toBe("cancelled");
    const line = await fixture.bridge().nextLine("task_cancel_requested", { since: 0, where: (l) => l["task_id"] === id });
    expect(line["actor"]).toBe("operator");
    const again = await tasks("cancel", id);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`serverfs: AGENT_TASK_TERMINAL: task ${id} had already ended (cancelled); nothing was cancelled\n`);
  });

  test("an approval answered elsewhere first loses nothing: the CLI's later answer is refused, not applied twice", async () => {
    const task = await started("approval:make race", "waiting_for_approval");
    const id = String(task["task_id"]);
    // the MCP side answers first (no actor: the default, `mcp`)
    await call(sock, "task.approval.respond", { task_id: id, request_id: pendingId(task), decision: "deny" });
    expect(await answeredBy(id)).toMatchObject({ actor: "mcp" });
    await fixture.waitFor(id, isTerminalTask);
    const r = await tasks("approve", id);
    expect(r.code).toBe(1);
    expect(r.stderr).toStartWith("serverfs: REQUEST_NOT_FOUND: ");
  });
});

test("an unknown actor is INVALID_REQUEST", async () => {
  const r = await rpc(sock, "task.cancel", { task_id: "agt_000000000000000000000000", actor: "root" });
  expect(r.error?.code).toBe("INVALID_REQUEST");
});
