/**
 * docs/mcp-tools.md#results-and-errors: in every tool result the fields that can be large come last, so a
 * host that shows the model only the start of a long result (Claude Code: a 2 KB preview past about
 * 45 KB, docs/hosts.md) still shows offsets, `eof`, sizes, hashes, status and ids. Checked for all 22
 * tools through the SDK client over stdio, on the wire text block and on `structuredContent`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { type BridgeEnv, type BridgeProcess, bridgeEnv, startBridgeProcess } from "../helpers/bridge.ts";
import { type McpSession, startStdio, structured } from "../helpers/mcp-client.ts";
import { hasStatus, isTerminal, type Json, submit, waitForTask } from "./support.ts";

/** Each tool's large fields, in the order they must end its result. */
const BULK: Record<string, string[]> = {
  list_workdirs: ["workdirs"],
  list_directory: ["entries"],
  find_files: ["matches"],
  search_text: ["matches"],
  read_text_file: ["content"],
  list_agent_runtimes: ["runtimes"],
  get_agent_task: ["pending_request", "manifest", "final_response"],
  read_agent_task_events: ["events"],
  read_agent_task_result: ["text"],
};
/** How much of a long result Claude Code shows the model (docs/hosts.md). */
const PREVIEW_CHARS = 2000;
/** A field of a tool without bulk stays well below a preview. */
const SMALL_FIELD_CHARS = 256;

let env: BridgeEnv;
let bridge: BridgeProcess;
let mcp: McpSession;
/** Every successful result, by tool, in call order. */
const results = new Map<string, CallToolResult[]>();

async function call(name: string, args: Json = {}): Promise<Json> {
  const r = await mcp.call(name, args);
  const list = results.get(name) ?? [];
  list.push(r);
  results.set(name, list);
  return structured(r);
}

const textOf = (r: CallToolResult) => (r.content[0] as { text: string }).text;
const present = (tool: string, keys: string[]) => (BULK[tool] ?? []).filter((k) => keys.includes(k));

beforeAll(async () => {
  env = bridgeEnv({ workdir: { binary_transfer_enabled: true } });
  bridge = await startBridgeProcess(env);
  mcp = await startStdio(env.configPath);
  const repo = { workdir: "repo" };

  await call("list_workdirs");
  await call("list_directory", repo);
  await call("find_files", { ...repo, pattern: "*.md" });
  await call("search_text", { ...repo, query: "demo" });
  await call("read_text_file", { ...repo, path: "README.md" });
  await call("stat_file", { ...repo, path: "README.md" });
  const created = await call("create_text_file", { ...repo, path: "note.txt", content: "one\n" });
  const edited = await call("edit_text_file", {
    ...repo,
    path: "note.txt",
    expected_revision: created["revision"],
    edits: [{ old_text: "one", new_text: "two" }],
  });
  await call("download_binary_file", { ...repo, path: "note.txt" });
  await call("upload_binary_file", { ...repo, path: "blob.bin", data_base64: "AAEC" });
  await call("delete_file", { ...repo, path: "note.txt", expected_revision: edited["revision"] });
  const dir = await call("create_directory", { ...repo, path: "made" });
  await call("delete_directory", { ...repo, path: "made", expected_revision: dir["revision"] });
  await call("list_agent_runtimes");

  // a spooled result: its final_response is a 64 KiB preview, its default chunk 64 KiB of text
  const spooled = await submit(mcp, { runtime: "fake", workdir: "repo", profile: "review", prompt: "repeat:20000:result ✓ text " });
  await waitForTask(mcp, spooled, isTerminal);
  await call("get_agent_task", { task_id: spooled });
  await call("read_agent_task_events", { task_id: spooled });
  await call("read_agent_task_result", { task_id: spooled });

  const approval = await submit(mcp, { runtime: "fake", workdir: "repo", profile: "review", prompt: "approval:ls" });
  const pending = await waitForTask(mcp, approval, hasStatus("waiting_for_approval"));
  await call("get_agent_task", { task_id: approval });
  const approvalId = (pending["pending_request"] as Json)["request_id"];
  await call("respond_agent_approval", { task_id: approval, request_id: approvalId, decision: "approve_once" });

  const question = await submit(mcp, { runtime: "fake", workdir: "repo", profile: "review", prompt: "question:which?" });
  const asked = await waitForTask(mcp, question, hasStatus("waiting_for_question"));
  const questionId = (asked["pending_request"] as Json)["request_id"];
  await call("answer_agent_question", { task_id: question, request_id: questionId, answers: [{ question_id: "q1", selected_option_ids: ["a"] }] });

  const steered = await submit(mcp, { runtime: "fake", workdir: "repo", profile: "review", prompt: "steer:" });
  await waitForTask(mcp, steered, hasStatus("running"));
  await call("send_agent_message", { task_id: steered, message: "go" });
  const waiting = String((await call("submit_agent_task", { runtime: "fake", workdir: "repo", profile: "review", prompt: "wait:" }))["task_id"]);
  await call("cancel_agent_task", { task_id: waiting });
}, 60_000);

afterAll(async () => {
  await mcp?.close();
  await bridge?.stop();
  env?.dir.remove();
});

describe("result key order (docs/mcp-tools.md#results-and-errors)", () => {
  test("all 22 tools were called and answered", async () => {
    const listed = (await mcp.client.listTools()).tools.map((t) => t.name);
    expect(listed).toHaveLength(22);
    expect([...results.keys()].sort()).toEqual([...listed].sort());
  });

  test("the text block is the structuredContent object with the same key order, at every depth", () => {
    for (const [tool, list] of results) {
      for (const r of list) expect({ tool, text: textOf(r) }).toEqual({ tool, text: JSON.stringify(r.structuredContent) });
    }
  });

  test("each tool's large fields end its result, in the documented order", () => {
    for (const [tool, list] of results) {
      for (const r of list) {
        const keys = Object.keys(JSON.parse(textOf(r)) as Json);
        const bulk = present(tool, keys);
        expect({ tool, tail: keys.slice(keys.length - bulk.length) }).toEqual({ tool, tail: bulk });
        expect({ tool, structured: Object.keys(r.structuredContent ?? {}) }).toEqual({ tool, structured: keys });
      }
    }
    // every field a task carries, listed or additive, comes before pending_request, manifest and final_response
    const task = JSON.parse(textOf(results.get("get_agent_task")![0]!)) as Json;
    expect(Object.keys(task).slice(-3)).toEqual(["pending_request", "manifest", "final_response"]);
  });

  test("a tool without bulk has only small fields, so a new large field must be placed", () => {
    for (const [tool, list] of results) {
      if (BULK[tool]) continue;
      for (const r of list) {
        for (const [key, value] of Object.entries(JSON.parse(textOf(r)) as Json)) {
          expect({ field: `${tool}.${key}`, small: JSON.stringify(value).length <= SMALL_FIELD_CHARS }).toEqual({ field: `${tool}.${key}`, small: true });
        }
      }
    }
  });

  test("nested bulk comes last too: a search hit's text, an event's payload", () => {
    const hit = (JSON.parse(textOf(results.get("search_text")![0]!)) as { matches: Json[] }).matches[0]!;
    expect(Object.keys(hit)).toEqual(["path", "line", "text_truncated", "text"]);
    const events = (JSON.parse(textOf(results.get("read_agent_task_events")![0]!)) as { events: Json[] }).events;
    expect(events.length).toBeGreaterThan(0);
    for (const e of events) expect(Object.keys(e).at(-1)).toBe("payload");
  });

  test("in a result over the host's inline limit, the first 2 KB hold every small field", () => {
    const chunk = textOf(results.get("read_agent_task_result")![0]!);
    const task = textOf(results.get("get_agent_task")![0]!);
    // the default max_bytes and a spooled task's preview are both past Claude Code's ~45 KB
    expect(chunk.length).toBeGreaterThan(45_000);
    expect(task.length).toBeGreaterThan(45_000);
    const head = chunk.slice(0, PREVIEW_CHARS);
    for (const field of ['"offset_bytes":0', '"next_offset_bytes":65', '"eof":false', '"correlation_id"']) expect(head).toContain(field);
    const taskHead = task.slice(0, PREVIEW_CHARS);
    for (const field of ['"status":"succeeded"', '"storage":"spool"', '"size_bytes":', '"sha256":', '"final_response_truncated":true']) {
      expect(taskHead).toContain(field);
    }
  });
});
