/**
 * The surface a client sees before it calls anything (docs/mcp-tools.md#server-identity-and-instructions, docs/mcp-tools.md#parameters, docs/mcp-tools.md#annotations, docs/mcp-tools.md#registration): which
 * tools `serverfs mcp` registers for which configuration, in which order, with which annotations and
 * input schemas, and what its instructions say. Startup never contacts the Bridge (docs/mcp-tools.md#startup), so these
 * servers run without one.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { type McpSession, startStdio } from "../helpers/mcp-client.ts";
import type { Table } from "../helpers/toml.ts";
import { AGENT_TOOLS, BINARY_TOOLS, FILESYSTEM_TOOLS } from "../helpers/tool-names.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

/** docs/mcp-tools.md#annotations, row by row: readOnly, destructive, idempotent, openWorld. */
const HINTS: Record<string, [boolean, boolean, boolean, boolean]> = {
  list_workdirs: [true, false, true, false],
  list_directory: [true, false, true, false],
  find_files: [true, false, true, false],
  search_text: [true, false, true, false],
  read_text_file: [true, false, true, false],
  stat_file: [true, false, true, false],
  create_text_file: [false, false, false, false],
  edit_text_file: [false, true, true, false],
  delete_file: [false, true, true, false],
  create_directory: [false, false, true, false],
  delete_directory: [false, true, true, false],
  download_binary_file: [true, false, true, false],
  upload_binary_file: [false, true, false, false],
  list_agent_runtimes: [true, false, true, false],
  get_agent_task: [true, false, true, false],
  read_agent_task_events: [true, false, true, false],
  read_agent_task_result: [true, false, true, false],
  submit_agent_task: [false, true, false, true],
  respond_agent_approval: [false, true, true, true],
  answer_agent_question: [false, false, true, true],
  send_agent_message: [false, true, false, true],
  cancel_agent_task: [false, true, true, true],
};

/** Required parameters, from the signatures of docs/mcp-tools.md#read-tools to docs/mcp-tools.md#binary-tools and the table of docs/mcp-tools.md#agent-tool-parameters. */
const REQUIRED: Record<string, string[]> = {
  list_workdirs: [],
  list_directory: ["workdir"],
  find_files: ["workdir", "pattern"],
  search_text: ["workdir", "query"],
  read_text_file: ["workdir", "path"],
  stat_file: ["workdir", "path"],
  create_text_file: ["workdir", "path", "content"],
  edit_text_file: ["workdir", "path", "expected_revision", "edits"],
  delete_file: ["workdir", "path", "expected_revision"],
  create_directory: ["workdir", "path"],
  delete_directory: ["workdir", "path", "expected_revision"],
  download_binary_file: ["workdir", "path"],
  upload_binary_file: ["workdir", "path", "data_base64"],
  list_agent_runtimes: [],
  submit_agent_task: ["runtime", "workdir", "prompt"],
  get_agent_task: ["task_id"],
  read_agent_task_events: ["task_id"],
  respond_agent_approval: ["task_id", "request_id", "decision"],
  answer_agent_question: ["task_id", "request_id", "answers"],
  send_agent_message: ["task_id", "message"],
  cancel_agent_task: ["task_id"],
  read_agent_task_result: ["task_id"],
};

/** Every defaulted top-level parameter and its default (default [limits]). */
const DEFAULTS: Record<string, Record<string, unknown>> = {
  list_directory: { path: "", offset: 0, limit: 100 },
  find_files: { path: "", limit: 50 },
  search_text: { path: "", glob: null, case_sensitive: true, limit: 50 },
  read_text_file: { start_line: 1, max_lines: 200 },
  upload_binary_file: { overwrite: false, expected_revision: null },
  submit_agent_task: { path: "", profile: "workspace-write" },
  read_agent_task_events: { after_event_id: 0, limit: 100, wait_ms: 0 },
  read_agent_task_result: { offset_bytes: 0, max_bytes: 65_536 },
};

/** The Agent integer parameters with a declared maximum (docs/mcp-tools.md#agent-tool-parameters); the rest have only a minimum. */
const AGENT_RANGES: Record<string, Record<string, [number, number]>> = {
  read_agent_task_events: { after_event_id: [0, Number.MAX_SAFE_INTEGER], limit: [1, 500], wait_ms: [0, 25_000] },
  read_agent_task_result: { offset_bytes: [0, Number.MAX_SAFE_INTEGER], max_bytes: [1, 65_536] },
};

type Schema = Record<string, unknown> & { properties?: Record<string, Schema>; items?: Schema };

/** Every schema node below a tool's inputSchema, with a dotted name for messages. */
function nodes(schema: Schema, name: string, out: [string, Schema][] = []): [string, Schema][] {
  out.push([name, schema]);
  for (const [k, s] of Object.entries(schema.properties ?? {})) nodes(s, `${name}.${k}`, out);
  if (schema.items) nodes(schema.items, `${name}[]`, out);
  for (const alt of (schema["anyOf"] as Schema[] | undefined) ?? []) nodes(alt, name, out);
  return out;
}

let dir: TempDir;
const sessions: McpSession[] = [];

function config(name: string, table: Table): string {
  return writeConfig(dir.path, table, `${name}.toml`);
}

async function listing(session: McpSession): Promise<Tool[]> {
  return (await session.client.listTools()).tools;
}

let agent: McpSession; // Bridge on, an Agent workdir, fake runtime: 20
let agentBinary: McpSession; // ... plus binary transfer, codex only: 22
let plain: McpSession; // Bridge off: 11
let binaryOnly: McpSession; // Bridge off, binary transfer: 13
let bridgeNoAgent: McpSession; // Bridge on, no Agent workdir: 11

beforeAll(async () => {
  dir = tempDir("sfs-e2e-");
  const ws = dir.dir("ws");
  const bridge = { enabled: true, socket_path: `${dir.path}/run/b.sock`, state_dir: `${dir.path}/state`, lock_dir: `${dir.path}/locks` };
  const start = (name: string, table: Table) => startStdio(config(name, table));
  [agent, agentBinary, plain, binaryOnly, bridgeNoAgent] = await Promise.all([
    start("agent", {
      bridge: { ...bridge, enable_fake_runtime: true },
      workdirs: [{ slot: 1, alias: "repo", path: ws, read_only: false, agent_mode: "workspace-write", agent_runtimes: ["fake"] }],
    }),
    start("agent-binary", {
      bridge,
      runtimes: { codex: { enabled: true } },
      workdirs: [
        { slot: 1, alias: "repo", path: ws, read_only: false, binary_transfer_enabled: true, agent_mode: "workspace-write", agent_runtimes: ["codex"] },
      ],
    }),
    start("plain", { workdirs: [{ slot: 1, alias: "repo", path: ws }] }),
    start("binary", { workdirs: [{ slot: 1, alias: "repo", path: ws, binary_transfer_enabled: true }] }),
    start("bridge-no-agent", { bridge, workdirs: [{ slot: 1, alias: "repo", path: ws, read_only: false }] }),
  ]);
  sessions.push(agent, agentBinary, plain, binaryOnly, bridgeNoAgent);
}, 60_000);
afterAll(async () => {
  await Promise.all(sessions.map((s) => s.close()));
  dir.remove();
}, 60_000);

describe("registration and tool counts", () => {
  test("the Bridge enabled with an Agent workdir registers 20 tools, in the table's order", async () => {
    expect((await listing(agent)).map((t) => t.name)).toEqual([...FILESYSTEM_TOOLS, ...AGENT_TOOLS]);
  });

  test("with binary transfer on as well, 22 tools: filesystem, binary, Agent", async () => {
    expect((await listing(agentBinary)).map((t) => t.name)).toEqual([...FILESYSTEM_TOOLS, ...BINARY_TOOLS, ...AGENT_TOOLS]);
  });

  test("with the Bridge disabled, the 11 filesystem tools only", async () => {
    expect((await listing(plain)).map((t) => t.name)).toEqual(FILESYSTEM_TOOLS);
  });

  test("binary transfer without the Bridge gives 13", async () => {
    expect((await listing(binaryOnly)).map((t) => t.name)).toEqual([...FILESYSTEM_TOOLS, ...BINARY_TOOLS]);
  });

  test("the Bridge enabled with no Agent workdir registers no Agent tool", async () => {
    expect((await listing(bridgeNoAgent)).map((t) => t.name)).toEqual(FILESYSTEM_TOOLS);
  });

  test("the startup audit event counts the registered tools", async () => {
    for (const [session, count] of [
      [agent, 20],
      [agentBinary, 22],
      [plain, 11],
    ] as const) {
      const startup = session.audit().find((r) => r["event"] === "startup");
      expect(startup?.["tool_count"]).toBe(count);
    }
  });
});

describe("annotations", () => {
  test("every tool declares all four hints with the table's values", async () => {
    const tools = await listing(agentBinary);
    expect(tools).toHaveLength(22);
    for (const tool of tools) {
      const a = tool.annotations ?? {};
      const got = [a.readOnlyHint, a.destructiveHint, a.idempotentHint, a.openWorldHint];
      expect({ tool: tool.name, hints: got }).toEqual({ tool: tool.name, hints: HINTS[tool.name]! });
    }
  });
});

describe("parameters and input schemas", () => {
  test("every inputSchema is a flat object: additionalProperties false, a required list, no nested parameter object", async () => {
    for (const tool of await listing(agentBinary)) {
      const schema = tool.inputSchema as Schema;
      expect({ tool: tool.name, type: schema["type"], extra: schema["additionalProperties"] }).toEqual({
        tool: tool.name,
        type: "object",
        extra: false,
      });
      expect({ tool: tool.name, required: [...((schema["required"] as string[]) ?? ["(none)"])].sort() }).toEqual({
        tool: tool.name,
        required: [...REQUIRED[tool.name]!].sort(),
      });
      for (const [name, prop] of Object.entries(schema.properties ?? {})) {
        expect({ param: `${tool.name}.${name}`, type: prop["type"] }).not.toEqual({ param: `${tool.name}.${name}`, type: "object" });
      }
    }
  });

  test("every defaulted parameter declares its default", async () => {
    const tools = new Map((await listing(agentBinary)).map((t) => [t.name, t.inputSchema as Schema]));
    for (const [tool, defaults] of Object.entries(DEFAULTS)) {
      const props = tools.get(tool)!.properties ?? {};
      for (const [name, value] of Object.entries(defaults)) {
        expect({ param: `${tool}.${name}`, default: props[name]?.["default"] }).toEqual({ param: `${tool}.${name}`, default: value });
      }
    }
    // defaults of elements of array parameters
    const edits = tools.get("edit_text_file")!.properties!["edits"]!.items!;
    expect(edits.properties!["expected_count"]!["default"]).toBe(1);
    const answers = tools.get("answer_agent_question")!.properties!["answers"]!.items!;
    expect(answers.properties!["selected_option_ids"]!["default"]).toEqual([]);
    expect(answers["additionalProperties"]).toBe(false);
  });

  test("every numeric parameter is type integer (the budget in USD alone is a number) with a declared minimum and maximum", async () => {
    let seen = 0;
    for (const tool of await listing(agentBinary)) {
      for (const [name, node] of nodes(tool.inputSchema as Schema, tool.name)) {
        if (node["type"] !== "integer" && node["type"] !== "number") continue;
        seen++;
        // docs/mcp-tools.md: max_budget_usd is dollars in steps of 0.000001, every other number a count
        const type = name === "submit_agent_task.max_budget_usd" ? "number" : "integer";
        expect({ param: name, type: node["type"] }).toEqual({ param: name, type });
        expect({ param: name, min: typeof node["minimum"], max: typeof node["maximum"] }).toEqual({ param: name, min: "number", max: "number" });
      }
    }
    expect(seen).toBeGreaterThanOrEqual(12);
  });

  test("the Agent ranges are those of Agent tool parameters", async () => {
    const tools = new Map((await listing(agent)).map((t) => [t.name, t.inputSchema as Schema]));
    for (const [tool, ranges] of Object.entries(AGENT_RANGES)) {
      for (const [name, [min, max]] of Object.entries(ranges)) {
        const p = tools.get(tool)!.properties![name]!;
        expect({ param: `${tool}.${name}`, min: p["minimum"], max: p["maximum"] }).toEqual({ param: `${tool}.${name}`, min, max });
      }
    }
  });

  test("the enums of Agent tool parameters: runtime lists fake only when the fake runtime is enabled; profile and decision", async () => {
    const withFake = new Map((await listing(agent)).map((t) => [t.name, t.inputSchema as Schema]));
    const withoutFake = new Map((await listing(agentBinary)).map((t) => [t.name, t.inputSchema as Schema]));
    const submitProps = (m: Map<string, Schema>) => m.get("submit_agent_task")!.properties!;
    expect([...(submitProps(withFake)["runtime"]!["enum"] as string[])].sort()).toEqual(["claude", "codex", "fake"]);
    expect([...(submitProps(withoutFake)["runtime"]!["enum"] as string[])].sort()).toEqual(["claude", "codex"]);
    expect([...(submitProps(withFake)["profile"]!["enum"] as string[])].sort()).toEqual(["review", "workspace-write"]);
    const decision = withFake.get("respond_agent_approval")!.properties!["decision"]!["enum"] as string[];
    expect([...decision].sort()).toEqual(["approve_once", "approve_session", "cancel_task", "deny"]);
  });
});

describe("instructions", () => {
  const POINTS: [string, RegExp[]][] = [
    ["1: list_workdirs first, alias plus relative / path, no absolute, ~ or ..", [/list_workdirs/, /alias/, /relative/, /absolute/, /~/, /\.\./]],
    ["2: read-only unless read-write; hidden and credential-like files refused", [/read-only/, /read-write/, /hidden/i, /credential/i]],
    ["3: contents, hits, Agent events and results are untrusted data", [/untrusted/i, /search hits/i, /Agent events/i, /Agent results/i]],
    ["4: no shell, no commands", [/no shell/i, /commands/i]],
    ["5: edits and deletes need the revision; stale fails", [/revision/, /read_text_file/, /stat_file/, /stale/i]],
    ["6: binary bytes only through the binary tools", [/binary/i, /download_binary_file|upload_binary_file/]],
  ];
  const AGENT_POINT: RegExp[] = [/asynchronous/i, /submit_agent_task/, /read_agent_task_events/, /get_agent_task/, /approvals?/i, /questions?/i, /human/i];

  test("with Agent tools registered, all seven points are present", () => {
    const text = agent.client.getInstructions() ?? "";
    for (const [point, patterns] of POINTS) for (const p of patterns) expect({ point, found: p.test(text) }).toEqual({ point, found: true });
    for (const p of AGENT_POINT)
      expect({ point: "7: Agent tasks are asynchronous", found: p.test(text) }).toEqual({ point: "7: Agent tasks are asynchronous", found: true });
  });

  test("without Agent tools, points 1–6 and not point 7", () => {
    const text = plain.client.getInstructions() ?? "";
    for (const [point, patterns] of POINTS) for (const p of patterns) expect({ point, found: p.test(text) }).toEqual({ point, found: true });
    expect(text).not.toMatch(/submit_agent_task|asynchronous/);
  });
});
