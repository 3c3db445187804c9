/**
 * Agent fidelity on the real Claude Code CLI, end to end: the scripted Messages mock, `claude -p`, a
 * real `serverfs bridge` and a real `serverfs mcp` driven through the MCP SDK's Client
 * (test/fixtures/agent-stack.ts). Every approval and question is answered through the MCP Agent tools,
 * and the mock checks what reached the model (docs/agent-requests.md).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type AgentStack, CLAUDE_BIN, CLAUDE_PRESENT, cliMissing, startAgentStack } from "../fixtures/agent-stack.ts";
import { type MockAnthropic, type MockStep, startMockAnthropic } from "../fixtures/mock-anthropic.ts";
import { eventually, type Json, ok } from "../e2e/support.ts";
import { markedProcesses, recordedMark } from "../helpers/bridge.ts";

if (!CLAUDE_PRESENT) cliMissing("Claude Code", CLAUDE_BIN, "npm install --no-save @anthropic-ai/claude-code@2.1.332");

const stacks: AgentStack[] = [];
const mocks: MockAnthropic[] = [];
afterEach(async () => {
  for (const s of stacks.splice(0)) await s.stop();
  for (const m of mocks.splice(0)) m.stop();
});

async function stack(steps: MockStep[]): Promise<{ s: AgentStack; mock: MockAnthropic }> {
  const mock = startMockAnthropic(steps);
  mocks.push(mock);
  const s = await startAgentStack({ runtime: "claude", mock });
  stacks.push(s);
  return { s, mock };
}

/** The tool results the model was shown in the latest request: their text and error flag. */
function toolResults(mock: MockAnthropic): { text: string; isError: boolean }[] {
  const out: { text: string; isError: boolean }[] = [];
  for (const m of mock.requests.at(-1)?.messages ?? []) {
    if (!Array.isArray(m.content)) continue;
    for (const part of m.content as Json[]) {
      if (part["type"] === "tool_result") out.push({ text: JSON.stringify(part["content"]), isError: part["is_error"] === true });
    }
  }
  return out;
}

const RUN_MS = 60_000;

describe.skipIf(!CLAUDE_PRESENT)("claude Bash approvals through the Bridge and MCP", () => {
  const touch = (name: string): MockStep => ({ tool: "Bash", input: { command: `touch ${name}`, description: "Create a file" } });

  test("approve_once: the command runs; the approval shows the command and its reason", async () => {
    const { s } = await stack([touch("made.txt"), { say: "made" }]);
    const taskId = await s.submit({ prompt: "make a file" });
    const request = await s.pending(taskId);
    expect(request["payload"]).toMatchObject({ category: "command", command: "touch made.txt", reason: "Create a file", summary: "Run a command: touch made.txt" });
    expect(await s.respond(taskId, request, "approve_once")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "made" });
    expect(existsSync(join(s.workspace, "made.txt"))).toBe(true);
  }, RUN_MS);

  test("deny: the command does not run, the model is told, and tool.completed carries the reason", async () => {
    const { s, mock } = await stack([touch("refused.txt"), { say: "understood" }]);
    const taskId = await s.submit({ prompt: "make a file" });
    const request = await s.pending(taskId);
    expect(await s.respond(taskId, request, "deny")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "understood" });
    expect(existsSync(join(s.workspace, "refused.txt"))).toBe(false);
    expect(toolResults(mock)).toContainEqual({ text: expect.stringContaining("Denied by the remote user"), isError: true });
    const completed = (await s.events(taskId)).find((e) => e["event_type"] === "tool.completed")!["payload"] as Json;
    expect(completed).toMatchObject({ tool: "Bash", is_error: true, error: expect.stringContaining("Denied by the remote user") });
  }, RUN_MS);

  test("cancel_task: the task is cancelled and the command never runs", async () => {
    const { s } = await stack([touch("never.txt"), { say: "unreachable" }]);
    const taskId = await s.submit({ prompt: "make a file" });
    const request = await s.pending(taskId);
    expect(await s.respond(taskId, request, "cancel_task")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "cancelled" });
    expect(existsSync(join(s.workspace, "never.txt"))).toBe(false);
  }, RUN_MS);
});

describe.skipIf(!CLAUDE_PRESENT)("claude Write and Edit approvals show a diff", () => {
  test("a Write of a new file is an add with the content as its diff; approved, the file is written", async () => {
    const { s, mock } = await stack([]);
    mock.script([{ tool: "Write", input: { file_path: join(s.workspace, "src/notes.txt"), content: "first\nsecond\n" } }, { say: "written" }]);
    const taskId = await s.submit({ prompt: "write notes" });
    const request = await s.pending(taskId);
    const payload = request["payload"] as Json;
    expect(payload["file_changes"]).toEqual([{ path: "src/notes.txt", kind: "add", diff: "--- /dev/null\n+++ b/src/notes.txt\n@@ -0,0 +1,2 @@\n+first\n+second\n" }]);
    expect(payload["summary"]).toBe("Change files: add src/notes.txt");
    expect(JSON.stringify(payload)).not.toContain(s.workspace);
    expect(await s.respond(taskId, request, "approve_once")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "written" });
    expect(readFileSync(join(s.workspace, "src/notes.txt"), "utf8")).toBe("first\nsecond\n");
  }, RUN_MS);

  test("an Edit of an existing file is an update with a located hunk; denied, the file is unchanged and the model is told", async () => {
    const { s, mock } = await stack([]);
    await Bun.write(join(s.workspace, "README.md"), "# demo\n\nline a\nline b\nline c\n");
    mock.script([
      { tool: "Read", input: { file_path: join(s.workspace, "README.md") } },
      { tool: "Edit", input: { file_path: join(s.workspace, "README.md"), old_string: "line b", new_string: "line B" } },
      { say: "left it" },
    ]);
    const taskId = await s.submit({ prompt: "edit the readme" });
    // Claude reads a file before it edits it; reading asks nobody in the workdir
    const request = await s.pending(taskId);
    const payload = request["payload"] as Json;
    expect(payload["file_changes"]).toEqual([
      {
        path: "README.md",
        kind: "update",
        diff: "--- a/README.md\n+++ b/README.md\n@@ -1,5 +1,5 @@\n # demo\n \n line a\n-line b\n+line B\n line c\n",
      },
    ]);
    expect(await s.respond(taskId, request, "deny")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "left it" });
    expect(readFileSync(join(s.workspace, "README.md"), "utf8")).toBe("# demo\n\nline a\nline b\nline c\n");
    expect(toolResults(mock).some((r) => r.isError && r.text.includes("Denied by the remote user"))).toBe(true);
  }, RUN_MS);

  test("a Write over a denied file is withheld: no content of it reaches the request", async () => {
    const { s, mock } = await stack([]);
    await Bun.write(join(s.workspace, "deploy.pem"), "canary-key-material\n");
    mock.script([{ tool: "Write", input: { file_path: join(s.workspace, "deploy.pem"), content: "replaced\n" } }, { say: "ok" }]);
    const taskId = await s.submit({ prompt: "replace the key" });
    const request = await s.pending(taskId);
    expect((request["payload"] as Json)["file_changes"]).toEqual([{ path: "deploy.pem", kind: "update", diff: null, withheld: true }]);
    expect(JSON.stringify(request)).not.toContain("canary-key-material");
    expect(await s.respond(taskId, request, "deny")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded" });
  }, RUN_MS);
});

describe.skipIf(!CLAUDE_PRESENT)("claude questions through the Bridge and MCP", () => {
  test("AskUserQuestion with options and free text: the answer reaches the model", async () => {
    const ask: MockStep = {
      tool: "AskUserQuestion",
      input: {
        questions: [
          {
            question: "Which colour?",
            header: "Colour",
            options: [
              { label: "red", description: "warm" },
              { label: "blue", description: "cool" },
            ],
            multiSelect: false,
          },
        ],
      },
    };
    const { s, mock } = await stack([ask, { say: "blue it is" }]);
    const taskId = await s.submit({ prompt: "ask me" });
    const request = await s.pending(taskId);
    expect(request).toMatchObject({ kind: "question" });
    const asked = (await s.events(taskId)).find((e) => e["event_type"] === "question.requested")!["payload"] as Json;
    expect(asked).toMatchObject({ summary: "Which colour?", category: "question", question_count: 1 });
    expect(await s.answer(taskId, request, [{ question_id: "q0", selected_option_ids: ["blue"], text: "navy, really" }])).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "blue it is" });
    expect(toolResults(mock).some((r) => r.text.includes("blue") && r.text.includes("navy, really"))).toBe(true);
  }, RUN_MS);
});

describe.skipIf(!CLAUDE_PRESENT)("claude continuation and cancel through the Bridge and MCP", () => {
  test("a continuation submitted right after success resumes the session: the model sees the earlier turn", async () => {
    const { s, mock } = await stack([{ say: "the first answer" }, { say: "the second answer" }]);
    const first = await s.submit({ prompt: "the first question" });
    expect(await s.finish(first)).toMatchObject({ status: "succeeded", final_response: "the first answer" });
    const second = await s.submit({ prompt: "the second question", continue_from_task_id: first });
    expect(await s.finish(second)).toMatchObject({ status: "succeeded", final_response: "the second answer" });
    const seen = JSON.stringify(mock.requests.at(-1)!.messages);
    for (const text of ["the first question", "the first answer", "the second question"]) expect(seen).toContain(text);
  }, RUN_MS);

  test("cancel while the model is thinking: the task is cancelled and no provider process is left", async () => {
    const { s, mock } = await stack([{ hang: true }]);
    const taskId = await s.submit({ prompt: "think forever" });
    await eventually(() => mock.requests.length > 0, 30_000);
    const mark = recordedMark(s.env.stateDir, taskId);
    expect(markedProcesses(mark).length).toBeGreaterThan(0);
    expect(await ok(s.mcp, "cancel_agent_task", { task_id: taskId })).toMatchObject({ status: "cancelled" });
    await eventually(() => markedProcesses(mark).length === 0, 30_000);
  }, RUN_MS);
});
