/**
 * docs/mcp-tools.md#parameters: every parameter of every tool states its meaning, range and default in
 * its description, because some hosts drop `minimum`, `maximum`, `default`, `minLength` and
 * `pattern` before the model sees the schema (docs/hosts.md). Each constraint the generated input
 * JSON Schema declares must be said in the words next to it, so a limit cannot change alone. The
 * tools are built from a config whose limits are not the defaults, so words that were typed instead
 * of generated from the config would show.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { prepareMcp } from "../../src/main/mcp/startup.ts";
import { jsonSchemaOf } from "../../src/main/mcp/tool.ts";
import { tempDir, writeConfig } from "../helpers/workspace.ts";

type Schema = Record<string, unknown>;

/** What each `pattern` a schema declares means, as its description must say it. */
const PATTERN_WORDS: Record<string, RegExp> = { "^[^\\n]*$": /no line break/i };

const NUMERIC = ["minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"] as const;
/** Keywords that say nothing the description must repeat, or whose parts are checked on their own. */
const STRUCTURAL = new Set(["type", "description", "anyOf", "items", "properties", "required", "additionalProperties"]);
const KNOWN = new Set([...STRUCTURAL, ...NUMERIC, "default", "enum", "pattern"]);

const mentions = (text: string, n: number) => new RegExp(`(^|[^0-9])${n}([^0-9]|$)`).test(text);
const isObject = (s: Schema) => typeof s["properties"] === "object";

/** The nodes whose constraints belong to one parameter: itself, its nullable alternatives, its scalar items. */
function constrained(param: Schema): Schema[] {
  const nodes = [param, ...((param["anyOf"] as Schema[] | undefined) ?? [])];
  const items = param["items"] as Schema | undefined;
  if (items && !isObject(items)) nodes.push(...constrained(items));
  return nodes;
}

/** Every way `param`'s description fails to state a constraint of its schema; counts what it checked. */
function paramProblems(name: string, param: Schema, checked: { n: number }): string[] {
  const text = param["description"];
  if (typeof text !== "string" || text.trim() === "") return [`${name}: no description`];
  const out: string[] = [];
  for (const node of constrained(param)) {
    for (const key of Object.keys(node)) if (!KNOWN.has(key)) out.push(`${name}: keyword ${key} has no rule here`);
    for (const key of NUMERIC) {
      const n = node[key];
      // the declared maximum of an integer without one (docs/mcp-tools.md#parameters)
      if (typeof n !== "number" || (key === "maximum" && n === Number.MAX_SAFE_INTEGER)) continue;
      checked.n++;
      if (!mentions(text, n)) out.push(`${name}: ${key} ${n} is not in its description`);
    }
    for (const value of (node["enum"] as unknown[] | undefined) ?? []) {
      checked.n++;
      if (!text.includes(String(value))) out.push(`${name}: enum value ${value} is not in its description`);
    }
    if (typeof node["pattern"] === "string") {
      checked.n++;
      const words = PATTERN_WORDS[node["pattern"]];
      if (!words) out.push(`${name}: pattern ${node["pattern"]} has no words in PATTERN_WORDS`);
      else if (!words.test(text)) out.push(`${name}: its description does not say ${words}`);
    }
  }
  if ("default" in param) {
    checked.n++;
    if (!text.includes(`Default: ${JSON.stringify(param["default"])}.`)) out.push(`${name}: default ${JSON.stringify(param["default"])} is not stated`);
  }
  return out;
}

/** Every problem of every parameter below an object schema, nested objects' parameters included. */
function problems(schema: Schema, name: string, checked = { n: 0 }): string[] {
  const out: string[] = [];
  for (const [key, param] of Object.entries((schema["properties"] as Record<string, Schema>) ?? {})) {
    out.push(...paramProblems(`${name}.${key}`, param, checked));
    const items = param["items"] as Schema | undefined;
    if (items && isObject(items)) out.push(...problems(items, `${name}.${key}[]`, checked));
  }
  return out;
}

const dir = tempDir("sfs-params-");
afterAll(() => dir.remove());

// every tool (22), with limits that are not the defaults and a per-workdir limit that differs
const configPath = writeConfig(dir.path, {
  limits: { default_list_limit: 77, max_list_entries: 321, default_search_results: 45, max_search_results: 123, max_edits_per_call: 17 },
  bridge: {
    enabled: true,
    enable_fake_runtime: true,
    socket_path: `${dir.path}/run/b.sock`,
    state_dir: `${dir.path}/state`,
    lock_dir: `${dir.path}/locks`,
  },
  workdirs: [
    {
      slot: 1,
      alias: "repo",
      path: dir.dir("repo"),
      read_only: false,
      binary_transfer_enabled: true,
      max_read_lines: 222,
      agent_mode: "workspace-write",
      agent_runtimes: ["fake"],
    },
    { slot: 2, alias: "docs", path: dir.dir("docs"), max_read_lines: 333 },
  ],
});
const tools = prepareMcp(configPath, "stdio").tools;
const inputOf = (tool: string) => jsonSchemaOf(tools.find((t) => t.name === tool)!.input);
const describedAs = (tool: string, param: string) => String((inputOf(tool)["properties"] as Record<string, Schema>)[param]!["description"]);

describe("parameter descriptions (docs/mcp-tools.md#parameters)", () => {
  test("every parameter of all 22 tools has a description that states each constraint of its schema", () => {
    expect(tools).toHaveLength(22);
    const checked = { n: 0 };
    const found = tools.flatMap((t) => problems(jsonSchemaOf(t.input), t.name, checked));
    expect(found).toEqual([]);
    // minimum, maximum, default, enum and pattern of some forty parameters
    expect(checked.n).toBeGreaterThan(50);
  });

  test("a capped parameter names its cap from the config, a per-workdir cap its range over the workdirs", () => {
    expect(describedAs("list_directory", "limit")).toContain("reduced to max_list_entries (321)");
    expect(describedAs("list_directory", "limit")).toContain("Default: 77.");
    expect(describedAs("find_files", "limit")).toContain("reduced to max_search_results (123)");
    expect(describedAs("search_text", "limit")).toContain("Default: 45.");
    expect(describedAs("read_text_file", "max_lines")).toContain("max_read_lines (222 to 333, by workdir)");
    expect(describedAs("edit_text_file", "edits")).toContain("max_edits_per_call (17)");
  });

  test("the inline chunk size is stated where a host needs it: read_agent_task_result.max_bytes", () => {
    expect(describedAs("read_agent_task_result", "max_bytes")).toMatch(/Up to 32768 keeps a chunk .* inline .* Claude Code/);
  });

  test("the check fails a description that leaves out a bound, a default, an enum value or a pattern's meaning", () => {
    const bad = {
      properties: {
        limit: { type: "integer", minimum: 1, maximum: 500, default: 100, description: "An integer from 1 to 50. Default: 10." },
        mode: { type: "string", enum: ["a", "bb"], description: "One of: a." },
        query: { type: "string", pattern: "^[^\\n]*$", description: "Text." },
        other: { type: "string", pattern: "^x$", description: "x" },
        items: { type: "array", items: { type: "object", properties: { id: { type: "string" } } }, description: "ids" },
        odd: { type: "string", format: "uri", description: "a URI" },
      },
    };
    expect(problems(bad, "t")).toEqual([
      "t.limit: maximum 500 is not in its description",
      "t.limit: default 100 is not stated",
      "t.mode: enum value bb is not in its description",
      "t.query: its description does not say /no line break/i",
      "t.other: pattern ^x$ has no words in PATTERN_WORDS",
      "t.items[].id: no description",
      "t.odd: keyword format has no rule here",
    ]);
  });
});
