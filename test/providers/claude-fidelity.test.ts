/**
 * Agent fidelity on the real Claude Code CLI, end to end: the scripted Messages mock, `claude -p`, a
 * real `serverfs bridge` and a real `serverfs mcp` driven through the MCP SDK's Client
 * (test/fixtures/agent-stack.ts). Every approval and question is answered through the MCP Agent tools,
 * and the mock checks what reached the model (docs/agent-requests.md).
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { eventually, type Json, ok } from "../e2e/support.ts";
import {
  type AgentStack,
  CLAUDE_BIN,
  CLAUDE_PRESENT,
  cliMissing,
  crashMidTurn,
  declinedUnasked,
  expireUnanswered,
  pathVerdict,
  stackPerTest,
} from "../fixtures/agent-stack.ts";
import { ASK_COLOUR, type MockAnthropic, type MockStep, startMockAnthropic } from "../fixtures/mock-anthropic.ts";
import { markedProcesses, recordedMark } from "../helpers/bridge.ts";
import { poll } from "../helpers/poll.ts";
import type { Table } from "../helpers/toml.ts";

if (!CLAUDE_PRESENT) cliMissing("Claude Code", CLAUDE_BIN, "npm install --no-save @anthropic-ai/claude-code@2.1.332");

const startStack = stackPerTest();

async function stack(steps: MockStep[], lifecycle?: Table): Promise<{ s: AgentStack; mock: MockAnthropic }> {
  const mock = startMockAnthropic(steps);
  return { s: await startStack({ runtime: "claude", mock, ...(lifecycle ? { lifecycle } : {}) }), mock };
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

  test(
    "approve_once: the command runs; the approval shows the command and its reason",
    async () => {
      const { s } = await stack([touch("made.txt"), { say: "made" }]);
      const taskId = await s.submit({ prompt: "make a file" });
      const request = await s.pending(taskId);
      expect(request["payload"]).toMatchObject({
        category: "command",
        command: "touch made.txt",
        reason: "Create a file",
        summary: "Run a command: touch made.txt",
      });
      expect(await s.respond(taskId, request, "approve_once")).toBeNull();
      expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "made" });
      expect(existsSync(join(s.workspace, "made.txt"))).toBe(true);
    },
    RUN_MS,
  );

  test(
    "after a cd the approval says where the command runs (the shell's directory, where it lands), in relative_cwd, the summary and the event",
    async () => {
      const { s, mock } = await stack([]);
      mkdirSync(join(s.workspace, "sub"));
      symlinkSync("sub", join(s.workspace, "inlink"));
      const cd = (dir: string): MockStep => ({ tool: "Bash", input: { command: `cd ${dir}`, description: "Change directory" } });
      mock.script([touch("top.txt"), cd("sub"), touch("here.txt"), cd("../inlink"), touch("there.txt"), { say: "done" }]);
      const taskId = await s.submit({ prompt: "make files here and there" });
      const said: Json[] = [];
      for (let i = 0; i < 3; i++) {
        const request = await s.pending(taskId);
        said.push(request["payload"] as Json);
        expect(await s.respond(taskId, request, "approve_once")).toBeNull();
        await poll(
          async () => ((await s.finishOrAsk(taskId))["pending_request"] as Json | null)?.["request_id"] !== request["request_id"],
          30_000,
          "the next step",
        );
      }
      expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "done" });
      expect(said.map((p) => [p["relative_cwd"], p["summary"]])).toEqual([
        [".", "Run a command: touch top.txt"],
        ["sub", "Run a command in sub: touch here.txt"],
        // `inlink` is a link to `sub`: the shell is said to be where it lands
        ["sub", "Run a command in sub: touch there.txt"],
      ]);
      const asked = (await s.events(taskId)).filter((e) => e["event_type"] === "approval.requested").map((e) => (e["payload"] as Json)["summary"]);
      expect(asked).toEqual(said.map((p) => p["summary"]));
      expect(["top.txt", "sub/here.txt", "sub/there.txt"].every((f) => existsSync(join(s.workspace, f)))).toBe(true);
    },
    RUN_MS,
  );

  test(
    "deny: the command does not run, the model is told, and tool.completed carries the reason",
    async () => {
      const { s, mock } = await stack([touch("refused.txt"), { say: "understood" }]);
      const taskId = await s.submit({ prompt: "make a file" });
      const request = await s.pending(taskId);
      expect(await s.respond(taskId, request, "deny")).toBeNull();
      expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "understood" });
      expect(existsSync(join(s.workspace, "refused.txt"))).toBe(false);
      expect(toolResults(mock)).toContainEqual({ text: expect.stringContaining("Denied by the remote user"), isError: true });
      const completed = (await s.events(taskId)).find((e) => e["event_type"] === "tool.completed")!["payload"] as Json;
      expect(completed).toMatchObject({ tool: "Bash", is_error: true, error: expect.stringContaining("Denied by the remote user") });
    },
    RUN_MS,
  );

  test(
    "cancel_task: the task is cancelled and the command never runs",
    async () => {
      const { s } = await stack([touch("never.txt"), { say: "unreachable" }]);
      const taskId = await s.submit({ prompt: "make a file" });
      const request = await s.pending(taskId);
      expect(await s.respond(taskId, request, "cancel_task")).toBeNull();
      expect(await s.finish(taskId)).toMatchObject({ status: "cancelled" });
      expect(existsSync(join(s.workspace, "never.txt"))).toBe(false);
    },
    RUN_MS,
  );
});

describe.skipIf(!CLAUDE_PRESENT)("claude Write and Edit approvals show a diff", () => {
  test(
    "a Write of a new file is an add with the content as its diff; approved, the file is written",
    async () => {
      const { s, mock } = await stack([]);
      mock.script([{ tool: "Write", input: { file_path: join(s.workspace, "src/notes.txt"), content: "first\nsecond\n" } }, { say: "written" }]);
      const taskId = await s.submit({ prompt: "write notes" });
      const request = await s.pending(taskId);
      const payload = request["payload"] as Json;
      expect(payload["file_changes"]).toEqual([
        { path: "src/notes.txt", kind: "add", diff: "--- /dev/null\n+++ b/src/notes.txt\n@@ -0,0 +1,2 @@\n+first\n+second\n" },
      ]);
      expect(payload["summary"]).toBe("Change files: add src/notes.txt");
      expect(JSON.stringify(payload)).not.toContain(s.workspace);
      const asked = (await s.events(taskId)).find((e) => e["event_type"] === "approval.requested")!["payload"] as Json;
      expect(asked).toMatchObject({ summary: payload["summary"], category: "file_change", paths: [{ path: "src/notes.txt", kind: "add" }] });
      expect(JSON.stringify(asked)).not.toContain("second");
      expect(await s.respond(taskId, request, "approve_once")).toBeNull();
      expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "written" });
      expect(readFileSync(join(s.workspace, "src/notes.txt"), "utf8")).toBe("first\nsecond\n");
    },
    RUN_MS,
  );

  test(
    "an Edit of an existing file is an update with a located hunk; denied, the file is unchanged and the model is told",
    async () => {
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
    },
    RUN_MS,
  );

  test(
    "a Write over a denied file is withheld: no content of it reaches the request",
    async () => {
      const { s, mock } = await stack([]);
      await Bun.write(join(s.workspace, "deploy.pem"), "canary-key-material\n");
      mock.script([{ tool: "Write", input: { file_path: join(s.workspace, "deploy.pem"), content: "replaced\n" } }, { say: "ok" }]);
      const taskId = await s.submit({ prompt: "replace the key" });
      const request = await s.pending(taskId);
      expect((request["payload"] as Json)["file_changes"]).toEqual([{ path: "deploy.pem", kind: "update", diff: null, withheld: true }]);
      expect(JSON.stringify(request)).not.toContain("canary-key-material");
      expect(await s.respond(taskId, request, "deny")).toBeNull();
      expect(await s.finish(taskId)).toMatchObject({ status: "succeeded" });
    },
    RUN_MS,
  );
});

describe.skipIf(!CLAUDE_PRESENT)("claude questions through the Bridge and MCP", () => {
  test(
    "AskUserQuestion with options and free text: the answer reaches the model",
    async () => {
      const { s, mock } = await stack([ASK_COLOUR, { say: "blue it is" }]);
      const taskId = await s.submit({ prompt: "ask me" });
      const request = await s.pending(taskId);
      expect(request).toMatchObject({ kind: "question" });
      const asked = (await s.events(taskId)).find((e) => e["event_type"] === "question.requested")!["payload"] as Json;
      expect(asked).toMatchObject({ summary: "Which colour?", category: "question", question_count: 1 });
      expect(await s.answer(taskId, request, [{ question_id: "q0", selected_option_ids: ["blue"], text: "navy, really" }])).toBeNull();
      expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "blue it is" });
      expect(toolResults(mock).some((r) => r.text.includes("blue") && r.text.includes("navy, really"))).toBe(true);
    },
    RUN_MS,
  );
});

describe.skipIf(!CLAUDE_PRESENT)("claude continuation and cancel through the Bridge and MCP", () => {
  test(
    "a continuation submitted right after success resumes the session: the model sees the earlier turn",
    async () => {
      const { s, mock } = await stack([{ say: "the first answer" }, { say: "the second answer" }]);
      const first = await s.submit({ prompt: "the first question" });
      expect(await s.finish(first)).toMatchObject({ status: "succeeded", final_response: "the first answer" });
      const second = await s.submit({ prompt: "the second question", continue_from_task_id: first });
      expect(await s.finish(second)).toMatchObject({ status: "succeeded", final_response: "the second answer" });
      const seen = JSON.stringify(mock.requests.at(-1)!.messages);
      for (const text of ["the first question", "the first answer", "the second question"]) expect(seen).toContain(text);
    },
    RUN_MS,
  );

  test(
    "cancel while the model is thinking: the task is cancelled and no provider process is left",
    async () => {
      const { s, mock } = await stack([{ hang: true }]);
      const taskId = await s.submit({ prompt: "think forever" });
      await eventually(() => mock.requests.length > 0, 30_000);
      const mark = recordedMark(s.env.stateDir, taskId);
      expect(markedProcesses(mark).length).toBeGreaterThan(0);
      expect(await ok(s.mcp, "cancel_agent_task", { task_id: taskId })).toMatchObject({ status: "cancelled" });
      await eventually(() => markedProcesses(mark).length === 0, 30_000);
    },
    RUN_MS,
  );
});

describe.skipIf(!CLAUDE_PRESENT)("claude cannot run a review task: it has no read-only mode to run it in", () => {
  test(
    "a review submit is AGENT_PROFILE_NOT_ALLOWED and no provider is started",
    async () => {
      const { s, mock } = await stack([{ say: "should not run" }]);
      const r = await s.mcp.call("submit_agent_task", { runtime: "claude", workdir: "repo", profile: "review", prompt: "review this" });
      expect((r.content[0] as { text: string }).text).toStartWith("AGENT_PROFILE_NOT_ALLOWED: ");
      expect(mock.requests).toHaveLength(0);
    },
    RUN_MS,
  );
});

describe.skipIf(!CLAUDE_PRESENT)("claude: what the Bridge declines on its own, and what events tell", () => {
  const outside = join("/tmp", `sfs-claude-outside-${process.pid}.txt`);

  test(
    "a Write outside the workdir is declined by the Bridge (outside_workdir): no human asked, nothing written, the model told",
    async () => {
      rmSync(outside, { force: true });
      const { s, mock } = await stack([{ tool: "Write", input: { file_path: outside, content: "escaped\n" } }, { say: "stayed inside" }]);
      const taskId = await s.submit({ prompt: "write outside" });
      expect(await s.finishOrAsk(taskId)).toMatchObject({ status: "succeeded", final_response: "stayed inside", pending_request: null });
      expect(existsSync(outside)).toBe(false);
      const events = await s.events(taskId);
      expect(declinedUnasked(events)).toEqual([{ category: "file_change", title: "Change files", reason: "outside_workdir" }]);
      expect(toolResults(mock)).toContainEqual({ text: expect.stringContaining("Denied by the remote user"), isError: true });
    },
    RUN_MS,
  );

  test(
    "a Bash command blocked on an outside path, and a Read of one: each declined by the Bridge, never shown as a ../ path",
    async () => {
      const { s, mock } = await stack([
        { tool: "Bash", input: { command: "cat /etc/hostname", description: "Read the host name" } },
        { tool: "Read", input: { file_path: "/etc/hostname" } },
        { say: "not read" },
      ]);
      const taskId = await s.submit({ prompt: "read outside" });
      expect(await s.finishOrAsk(taskId)).toMatchObject({ status: "succeeded", final_response: "not read", pending_request: null });
      const events = await s.events(taskId);
      expect(declinedUnasked(events)).toEqual([
        { category: "command", title: "Run a command", reason: "outside_workdir" },
        { category: "other", title: "Use a tool", reason: "outside_workdir" },
      ]);
      expect(JSON.stringify(events)).not.toContain("../");
      expect(toolResults(mock).filter((r) => r.isError && r.text.includes("Denied by the remote user"))).toHaveLength(2);
    },
    RUN_MS,
  );

  test("outside is where a path lands, not how it is spelled: each spelling declined unasked, or shown as where it lands", async () => {
    const { s, mock } = await stack([]);
    // beside the workdir: `link` leads there, `inlink` stays inside
    const outside = join(dirname(s.workspace), "outside");
    mkdirSync(outside);
    writeFileSync(join(outside, "x.txt"), "outside canary\n");
    symlinkSync(outside, join(s.workspace, "link"));
    mkdirSync(join(s.workspace, "sub"));
    symlinkSync("sub", join(s.workspace, "inlink"));
    const write = (file_path: string): MockStep => ({ tool: "Write", input: { file_path, content: "written\n" } });
    const cases: [string, MockStep, "declined" | string[]][] = [
      ["Write ../outside/new.txt", write("../outside/new.txt"), "declined"],
      ["Write src/../../outside/new.txt", write("src/../../outside/new.txt"), "declined"],
      ["Write ~/.ssh/id_rsa (Claude's home)", write("~/.ssh/id_rsa"), "declined"],
      ["Write link/new.txt (a link to outside)", write("link/new.txt"), "declined"],
      ["Read ../outside/x.txt", { tool: "Read", input: { file_path: "../outside/x.txt" } }, "declined"],
      ["Read link/x.txt", { tool: "Read", input: { file_path: "link/x.txt" } }, "declined"],
      ["Bash cat link/x.txt", { tool: "Bash", input: { command: "cat link/x.txt", description: "Read" } }, "declined"],
      // Claude takes a file URL as a relative name: it lands inside, and is shown where it lands
      ["Write file:///etc/passwd", write("file:///etc/passwd"), ["file:/etc/passwd"]],
      ["Write inlink/new.txt (a link inside)", write("inlink/new.txt"), ["sub/new.txt"]],
    ];
    // each request is answered from its own task's prompt: a late request of an earlier task takes no later case's step
    mock.script([
      {
        poll: (request) => {
          const seen = JSON.stringify(request.messages);
          const index = cases.findIndex((_, i) => seen.includes(`[case ${i}]`));
          return index < 0 || seen.includes('"tool_result"') ? { say: "next" } : cases[index]![1];
        },
      },
    ]);
    const verdicts: Record<string, "declined" | string[]> = {};
    for (const [i, [name]] of cases.entries()) verdicts[name] = await pathVerdict(s, await s.submit({ prompt: `[case ${i}] ${name}` }));
    expect(verdicts).toEqual(Object.fromEntries(cases.map(([name, , verdict]) => [name, verdict])));
    expect(readdirSync(outside)).toEqual(["x.txt"]);
    expect(readFileSync(join(outside, "x.txt"), "utf8")).toBe("outside canary\n");
  }, 300_000);

  test(
    "Claude's own refusal reaches tool.completed as its text (\"Blocked: …\"), without the model's markup",
    async () => {
      const { s, mock } = await stack([{ tool: "Bash", input: { command: "sleep 30", description: "Wait" } }, { say: "will not wait" }]);
      const taskId = await s.submit({ prompt: "wait" });
      expect(await s.finishOrAsk(taskId)).toMatchObject({ status: "succeeded", final_response: "will not wait", pending_request: null });
      const completed = (await s.events(taskId)).find((e) => e["event_type"] === "tool.completed")!["payload"] as Json;
      expect(completed).toMatchObject({ tool: "Bash", is_error: true });
      expect(String(completed["error"])).toStartWith("Blocked: standalone sleep 30.");
      expect(String(completed["error"])).not.toContain("tool_use_error");
      // the model saw the same refusal
      expect(toolResults(mock).some((r) => r.isError && r.text.includes("Blocked: standalone sleep 30"))).toBe(true);
    },
    RUN_MS,
  );
});

describe.skipIf(!CLAUDE_PRESENT)("claude: steering, cancel mid-command, crash and expiry through the Bridge and MCP", () => {
  test(
    "send_agent_message is AGENT_PROVIDER_ERROR (no live steering); the message never reaches the model and the task runs on",
    async () => {
      const { s, mock } = await stack([{ tool: "Bash", input: { command: "touch steered.txt", description: "Create a file" } }, { say: "ran on" }]);
      const taskId = await s.submit({ prompt: "work" });
      const request = await s.pending(taskId);
      const r = await s.mcp.call("send_agent_message", { task_id: taskId, message: "a steering canary" });
      expect((r.content[0] as { text: string }).text).toStartWith("AGENT_PROVIDER_ERROR: live steering is not supported");
      expect(await s.respond(taskId, request, "approve_once")).toBeNull();
      expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "ran on" });
      expect(JSON.stringify(mock.requests.map((q) => q.messages))).not.toContain("a steering canary");
    },
    RUN_MS,
  );

  test(
    "cancel mid-command: the approved command's process is gone once the task is cancelled",
    async () => {
      const { s } = await stack([{ tool: "Bash", input: { command: "bash -c 'sleep 47.25'", description: "Wait" } }, { say: "never" }]);
      const taskId = await s.submit({ prompt: "wait a while" });
      const request = await s.pending(taskId);
      const mark = recordedMark(s.env.stateDir, taskId);
      expect(await s.respond(taskId, request, "approve_once")).toBeNull();
      // a marked process may exit between the listing and the read of its command line
      const cmdline = (pid: number | string) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, "utf8");
        } catch {
          return "";
        }
      };
      const sleeping = () => markedProcesses(mark).filter((pid) => cmdline(pid).includes("47.25"));
      await eventually(() => sleeping().length > 0, 30_000);
      expect(await ok(s.mcp, "cancel_agent_task", { task_id: taskId })).toMatchObject({ status: "cancelled" });
      await eventually(() => markedProcesses(mark).length === 0, 30_000);
    },
    RUN_MS,
  );

  test(
    "a provider crash mid-turn fails the task AGENT_PROVIDER_ERROR",
    async () => {
      const { s, mock } = await stack([{ hang: true }]);
      const taskId = await crashMidTurn(s, mock);
      expect(await s.finish(taskId)).toMatchObject({ status: "failed", error_code: "AGENT_PROVIDER_ERROR" });
    },
    RUN_MS,
  );

  test(
    "an approval nobody answers expires: interrupted AGENT_INTERACTION_TIMED_OUT, a late answer is REQUEST_STALE, the provider stopped",
    async () => {
      const { s } = await stack([{ tool: "Bash", input: { command: "touch late.txt", description: "Create a file" } }, { say: "never" }], {
        interaction_timeout_seconds: 2,
      });
      await expireUnanswered(s, await s.submit({ prompt: "ask and wait" }));
      expect(existsSync(join(s.workspace, "late.txt"))).toBe(false);
    },
    RUN_MS,
  );
});
