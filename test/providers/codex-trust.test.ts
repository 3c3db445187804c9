/**
 * Trust on the real Codex CLI (issue #22, third round), end to end: the scripted Responses mock,
 * `codex app-server`, a real `serverfs bridge` and `serverfs mcp` driven through the MCP SDK's Client
 * (test/fixtures/agent-stack.ts). The user's Codex config (the stack's CODEX_HOME) gets a stdio MCP
 * server whose tool writes into the workdir (test/fixtures/mcp-write-server.ts).
 *
 * - A review task never writes through an MCP server, even one whose tools are auto-approved, and
 *   even while a write task holds the writer lease (docs/agent-requests.md "Review tasks never ask").
 */
import { describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Json } from "../e2e/support.ts";
import { type AgentStack, CODEX_BIN, CODEX_PRESENT, cliMissing, stackPerTest } from "../fixtures/agent-stack.ts";
import { MCP_WRITE_SERVER } from "../fixtures/mcp-write-server.ts";
import { type MockOpenAI, type MockStep, startMockOpenAI } from "../fixtures/mock-openai.ts";
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

/** The model's steps to call the notes server's tool: search the deferred MCP tools first, as a real model does. */
const callNotes = (args: Json): MockStep[] => [
  { toolSearch: "notes write_note", limit: 10 },
  { call: "write_note", namespace: "mcp__notes", args },
];

/** The payloads of the task's item events of an MCP tool call. */
async function mcpItems(s: AgentStack, taskId: string): Promise<Json[]> {
  return (await s.events(taskId)).map((e) => e["payload"] as Json).filter((p) => p["type"] === "mcpToolCall");
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
    expect(readFileSync(join(s.workspace, "by-writer.txt"), "utf8")).toBe("w\n");
    expect(existsSync(join(s.workspace, "by-review.txt"))).toBe(false);
  }, 90_000);
});
