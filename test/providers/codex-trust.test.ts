/**
 * Trust on the real Codex CLI (issue #22, third round), end to end: the scripted Responses mock,
 * `codex app-server`, a real `serverfs bridge` and `serverfs mcp` driven through the MCP SDK's Client
 * (test/fixtures/agent-stack.ts). The user's Codex config (the stack's CODEX_HOME) gets a stdio MCP
 * server whose tool writes into the workdir (test/fixtures/mcp-write-server.ts).
 *
 * - A review task never writes through an MCP server, even one whose tools are auto-approved, and
 *   even while a write task holds the writer lease, nor through a hook the user trusted
 *   (docs/agent-requests.md "Review tasks never ask").
 * - Codex's approval of an MCP tool call is an `mcp_tool` approval a human answers; approve runs the
 *   tool, deny does not and the model is told (docs/agent-requests.md "MCP tools").
 * - A command that runs outside the sandbox says so (docs/agent-requests.md "Commands").
 */
import { describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Json } from "../e2e/support.ts";
import { type AgentStack, CODEX_BIN, CODEX_PRESENT, cliMissing, declinedUnasked, stackPerTest } from "../fixtures/agent-stack.ts";
import { MCP_WRITE_SERVER } from "../fixtures/mcp-write-server.ts";
import { type MockOpenAI, type MockStep, startMockOpenAI } from "../fixtures/mock-openai.ts";
import { runCli } from "../helpers/process.ts";
import type { Table } from "../helpers/toml.ts";

if (!CODEX_PRESENT) cliMissing("Codex", CODEX_BIN, "npm install --no-save @openai/codex@0.171.0");

const startStack = stackPerTest();
const UNTRUSTED = { approval_policy: "untrusted" };
const done = (say: string): MockStep => ({ say, phase: "final_answer" });

async function stack(steps: MockStep[], runtimeConfig: Table = {}): Promise<{ s: AgentStack; mock: MockOpenAI }> {
  const mock = startMockOpenAI(steps);
  return { s: await startStack({ runtime: "codex", mock, runtimeConfig }), mock };
}

/**
 * Adds the `notes` MCP server to the user's Codex config (read by every app-server the Bridge starts
 * afterwards); `approve` makes Codex run its tools without asking anyone.
 */
function addNotesServer(s: AgentStack, mode?: "approve"): void {
  const lines = [
    "",
    "[mcp_servers.notes]",
    `command = ${JSON.stringify(process.execPath)}`,
    `args = [${JSON.stringify(MCP_WRITE_SERVER)}, ${JSON.stringify(s.workspace)}]`,
    ...(mode ? [`default_tools_approval_mode = "${mode}"`] : []),
    "",
  ];
  appendFileSync(join(s.runtimeHome, "config.toml"), lines.join("\n"));
}

/**
 * Adds a PreToolUse hook to the user's Codex config that leaves `hooked` in the directory it runs in,
 * trusted as Codex records a person's trust (`[hooks.state."<key>"] trusted_hash`, the hash Codex
 * 0.171.0 computes for this hook, as `hooks/list` reports it).
 */
function addTrustedHook(s: AgentStack): void {
  const key = `${s.runtimeHome}/config.toml:pre_tool_use:0:0`;
  const lines = [
    "",
    "[[hooks.PreToolUse]]",
    "[[hooks.PreToolUse.hooks]]",
    'type = "command"',
    'command = "touch hooked"',
    `[hooks.state.${JSON.stringify(key)}]`,
    'trusted_hash = "sha256:5c0c819438e3f628ad8342ad71d3e2f6cbb86af18f313d9cded7ef0a17895bc0"',
    "",
  ];
  appendFileSync(join(s.runtimeHome, "config.toml"), lines.join("\n"));
}

/** The model's steps to call the notes server's tool: search the deferred MCP tools first, as a real model does. */
const callNotes = (args: Json): MockStep[] => [
  { toolSearch: "notes write_note", limit: 10 },
  { call: "write_note", namespace: "mcp__notes", args },
];

/** The payloads of the task's item events of an MCP tool call. */
async function mcpItems(s: AgentStack, taskId: string): Promise<Json[]> {
  return (await s.events(taskId)).map((e) => e["payload"] as Json).filter((p) => p["type"] === "mcpToolCall");
}

/** `serverfs tasks show`'s `pending` line. */
async function shownPending(s: AgentStack, taskId: string): Promise<string> {
  const r = await runCli(["tasks", "show", taskId, "--config", s.env.configPath]);
  expect(r.code).toBe(0);
  return r.stdout.split("\n").find((l) => l.startsWith("pending")) ?? "";
}

describe.skipIf(!CODEX_PRESENT)("item 1: a review task never writes through the user's MCP servers", () => {
  test("an auto-approved MCP write tool called by a review while a write task holds the lease: nothing written, the model told", async () => {
    const { s, mock } = await stack(
      [{ exec: "echo w > by-writer.txt" }, ...callNotes({ name: "by-review.txt", text: "no" }), done("reviewed"), done("written")],
      { ...UNTRUSTED, sandbox: "workspace-write" },
    );
    addNotesServer(s, "approve");
    const writer = await s.submit({ prompt: "write" });
    // the writer holds the lease while it waits for its human
    const request = await s.pending(writer);
    const review = await s.submit({ profile: "review", prompt: "review meanwhile" });
    expect(await s.finishOrAsk(review)).toMatchObject({ status: "succeeded", final_response: "reviewed", pending_request: null });
    expect(existsSync(join(s.workspace, "by-review.txt"))).toBe(false);
    // the review's thread had no MCP server: the model's call was refused, and it was told so
    expect(mock.toolOutput("call_2")).toMatch(/unsupported call/);
    expect(await mcpItems(s, review)).toEqual([]);
    expect(await s.respond(writer, request, "approve_once")).toBeNull();
    expect(await s.finish(writer)).toMatchObject({ status: "succeeded", final_response: "written" });
    // once in a CI run the approved command's file was missing: what the run said of its command, if so
    const writtenFile = join(s.workspace, "by-writer.txt");
    const commands = (await s.events(writer)).map((e) => e["payload"] as Json).filter((p) => p["type"] === "commandExecution");
    expect(existsSync(writtenFile), JSON.stringify({ commands, seen_by_model: mock.toolOutput("call_1") })).toBe(true);
    expect(readFileSync(writtenFile, "utf8")).toBe("w\n");
    expect(existsSync(join(s.workspace, "by-review.txt"))).toBe(false);
  }, 90_000);
});

describe.skipIf(!CODEX_PRESENT)("item 1: a review task never runs the user's hooks", () => {
  test("a trusted hook that writes runs for a write task, and not for a review", async () => {
    const { s } = await stack([{ exec: "ls" }, done("listed"), { exec: "ls" }, done("reviewed")], { approval_policy: "never", sandbox: "workspace-write" });
    addTrustedHook(s);
    const hooked = join(s.workspace, "hooked");
    // the hook is live: it writes for a write task (outside Codex's sandbox, as hooks run)
    expect(await s.finish(await s.submit({ prompt: "list" }))).toMatchObject({ status: "succeeded", final_response: "listed" });
    expect(existsSync(hooked)).toBe(true);
    rmSync(hooked);
    expect(await s.finish(await s.submit({ profile: "review", prompt: "review" }))).toMatchObject({ status: "succeeded", final_response: "reviewed" });
    expect(existsSync(hooked)).toBe(false);
  }, 60_000);
});

describe.skipIf(!CODEX_PRESENT)("item 2: Codex's MCP tool calls are asked as mcp_tool approvals", () => {
  test("approve: the human sees the server, the tool and its arguments; the tool runs and its item events name it", async () => {
    const { s, mock } = await stack([...callNotes({ name: "note.txt", text: "hello" }), done("noted")], UNTRUSTED);
    addNotesServer(s);
    const taskId = await s.submit({ prompt: "take a note" });
    const request = await s.pending(taskId);
    const payload = request["payload"] as Json;
    expect(payload).toMatchObject({
      category: "mcp_tool",
      title: "Use an MCP tool",
      server: "notes",
      tool: "write_note",
      tool_input: { name: "note.txt", text: "hello" },
      summary: "Use an MCP tool: notes/write_note",
    });
    // Codex offers to remember the tool for the session; "always" (a config write) is never offered
    expect(payload["available_decisions"]).toEqual(["approve_once", "approve_session", "deny", "cancel_task"]);
    const asked = (await s.events(taskId)).find((e) => e["event_type"] === "approval.requested")!["payload"] as Json;
    expect(asked).toMatchObject({ category: "mcp_tool", summary: payload["summary"] });
    expect(await shownPending(s, taskId)).toEndWith("Use an MCP tool: notes/write_note");
    expect(await s.respond(taskId, request, "approve_once")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "noted" });
    expect(readFileSync(join(s.workspace, "note.txt"), "utf8")).toBe("hello");
    expect(mock.toolOutput("call_1")).toContain("wrote note.txt");
    const items = await mcpItems(s, taskId);
    expect(items.at(-1)).toEqual({ type: "mcpToolCall", server: "notes", tool: "write_note", status: "completed" });
  }, 60_000);

  test("deny: the tool does not run, the model is told, and the failed item says why; the arguments were bounded and redacted", async () => {
    const big = "x".repeat(40_000);
    const { s, mock } = await stack([], UNTRUSTED);
    mock.script(...callNotes({ name: "refused.txt", text: big, about: join(s.workspace, "README.md") }), done("left alone"));
    addNotesServer(s);
    const taskId = await s.submit({ prompt: "take a big note" });
    const request = await s.pending(taskId);
    const payload = request["payload"] as Json;
    expect(payload).toMatchObject({ category: "mcp_tool", server: "notes", tool: "write_note", tool_input_truncated: true });
    const input = payload["tool_input"] as Json;
    expect(input["name"]).toBe("refused.txt");
    expect(String(input["text"]).length).toBe(1024);
    expect(input["about"]).toBe("README.md");
    expect(JSON.stringify(request)).not.toContain(s.workspace);
    expect(await s.respond(taskId, request, "deny")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "left alone" });
    expect(existsSync(join(s.workspace, "refused.txt"))).toBe(false);
    expect(mock.toolOutput("call_1")).toMatch(/user rejected MCP tool call/);
    const events = await s.events(taskId);
    expect(events.find((e) => e["event_type"] === "approval.resolved")?.["payload"]).toEqual({ decision: "deny" });
    const items = await mcpItems(s, taskId);
    expect(items.at(-1)).toEqual({ type: "mcpToolCall", server: "notes", tool: "write_note", status: "failed", error: "user rejected MCP tool call" });
  }, 60_000);
});

describe.skipIf(!CODEX_PRESENT)("item 2: an MCP tool call naming a path outside the workdir is never shown", () => {
  test("declined by the Bridge with approval.auto_declined (outside_workdir), no human asked, the tool not run", async () => {
    const { s, mock } = await stack([...callNotes({ name: "escaped.txt", text: "x", about: "/etc/passwd" }), done("refused")], UNTRUSTED);
    addNotesServer(s);
    const taskId = await s.submit({ prompt: "note about /etc" });
    expect(await s.finishOrAsk(taskId)).toMatchObject({ status: "succeeded", final_response: "refused", pending_request: null });
    expect(declinedUnasked(await s.events(taskId))).toEqual([{ category: "mcp_tool", title: "Use an MCP tool", reason: "outside_workdir" }]);
    expect(existsSync(join(s.workspace, "escaped.txt"))).toBe(false);
    expect(mock.toolOutput("call_1")).toMatch(/user rejected MCP tool call/);
  }, 60_000);
});

describe.skipIf(!CODEX_PRESENT)("item 3: a command that runs outside the sandbox says so", () => {
  test("an escalated command: outside_sandbox in its approval and in tasks show; denied, it does not run", async () => {
    const outside = join("/tmp", `sfs-codex-escalated-${process.pid}.txt`);
    rmSync(outside, { force: true });
    const { s, mock } = await stack([{ exec: `echo out > ${outside}`, escalate: true, justification: "write a file" }, done("declined")], {
      ...UNTRUSTED,
      sandbox: "workspace-write",
    });
    const taskId = await s.submit({ prompt: "write outside" });
    const request = await s.pending(taskId);
    expect(request["payload"]).toMatchObject({ category: "command", reason: "write a file", outside_sandbox: true });
    expect(await shownPending(s, taskId)).toEndWith("(outside the sandbox)");
    expect(await s.respond(taskId, request, "deny")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "declined" });
    expect(existsSync(outside)).toBe(false);
    expect(mock.toolOutput("call_0")).toMatch(/rejected by user/);
  }, 60_000);
});
