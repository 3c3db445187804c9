/**
 * Models, effort, budget and usage through the real thing (docs/runtimes.md#models-effort-and-budget):
 * the real Codex and Claude Code CLIs against the scripted mocks, a real `serverfs bridge` and a real
 * `serverfs mcp` driven through the MCP SDK's Client (test/fixtures/agent-stack.ts). The mocks record
 * which model and effort reached them; the usage they report must come back as `task.usage` events and
 * on the task.
 */
import { describe, expect, test } from "bun:test";
import { type Json, ok } from "../e2e/support.ts";
import { type AgentStack, CLAUDE_BIN, CLAUDE_PRESENT, CODEX_BIN, CODEX_PRESENT, cliMissing, stackPerTest } from "../fixtures/agent-stack.ts";
import { startMockAnthropic } from "../fixtures/mock-anthropic.ts";
import { MOCK_USAGE, startMockOpenAI } from "../fixtures/mock-openai.ts";
import { scriptedAppServerBin } from "../fixtures/scripted-app-server.ts";
import { errorCode } from "../helpers/mcp-client.ts";
import { tempDir } from "../helpers/workspace.ts";

if (!CODEX_PRESENT) cliMissing("Codex", CODEX_BIN, "npm install --no-save @openai/codex@0.171.0");
if (!CLAUDE_PRESENT) cliMissing("Claude Code", CLAUDE_BIN, "npm install --no-save @anthropic-ai/claude-code@2.1.332");

const startStack = stackPerTest();
const RUN_MS = 90_000;

/** The refusal of a submit_agent_task call: its code and message. */
async function refusal(s: AgentStack, args: Json): Promise<{ code: string | null; text: string }> {
  const r = await s.mcp.call("submit_agent_task", { runtime: s.runtime, workdir: "repo", ...args });
  return { code: errorCode(r), text: (r.content[0] as { text?: string } | undefined)?.text ?? "" };
}

const ofType = (events: Json[], type: string) => events.filter((e) => e["event_type"] === type).map((e) => e["payload"] as Json);

async function runtimeEntry(s: AgentStack): Promise<Json> {
  const r = await ok<{ runtimes: Json[] }>(s.mcp, "list_agent_runtimes");
  return r.runtimes.find((x) => x["name"] === s.runtime)!;
}

describe.skipIf(!CODEX_PRESENT)("codex: models from model/list, the choice on turn/start, usage from thread/tokenUsage/updated", () => {
  test(
    "the narrowed listing; refusals before anything starts; model and effort reach the mock; usage on events and task; a continuation keeps its parent's choices",
    async () => {
      const mock = startMockOpenAI([{ say: "first" }, { say: "second" }]);
      const s = await startStack({ runtime: "codex", mock, runtimeConfig: { models: ["gpt-5.5", "gpt-6-luna"] } });

      // the CLI's own default (gpt-6.2-sol) is not allowed, so the first allowed model in its order is
      const entry = await runtimeEntry(s);
      expect(entry["models"]).toEqual([
        { model: "gpt-6-luna", efforts: ["low", "medium", "high", "xhigh", "max"], default_effort: "medium", is_default: true },
        { model: "gpt-5.5", efforts: ["low", "medium", "high", "xhigh"], default_effort: "medium", is_default: false },
      ]);

      const disallowed = await refusal(s, { prompt: "x", model: "gpt-6.2-sol" });
      expect(disallowed.code).toBe("INVALID_ARGUMENT");
      expect(disallowed.text).toContain("allowed: gpt-6-luna, gpt-5.5");
      const effort = await refusal(s, { prompt: "x", model: "gpt-5.5", effort: "max" });
      expect(effort.code).toBe("INVALID_ARGUMENT");
      expect(effort.text).toContain("allowed: low, medium, high, xhigh");
      const budget = await refusal(s, { prompt: "x", max_budget_usd: 1 });
      expect(budget.code).toBe("INVALID_ARGUMENT");
      expect(budget.text).toContain("honoured by: claude");
      expect(mock.requests).toHaveLength(0);

      const parent = await s.submit({ prompt: "go", model: "gpt-5.5", effort: "high" });
      const done = await s.finish(parent, RUN_MS);
      expect(done).toMatchObject({ status: "succeeded", final_response: "first" });
      expect(mock.requests[0]!.body).toMatchObject({ model: "gpt-5.5", reasoning: { effort: "high" } });
      expect((done["manifest"] as Json)["choices"]).toEqual({ model: "gpt-5.5", effort: "high", max_budget_micro_usd: null });

      const events = await s.events(parent);
      expect(ofType(events, "task.started")).toEqual([{ runtime: "codex", model: "gpt-5.5", effort: "high", max_budget_usd: null }]);
      const reported = {
        input_tokens: MOCK_USAGE.input_tokens,
        cached_input_tokens: MOCK_USAGE.input_tokens_details.cached_tokens,
        output_tokens: MOCK_USAGE.output_tokens,
        reasoning_output_tokens: MOCK_USAGE.output_tokens_details.reasoning_tokens,
        cost_usd: null,
      };
      expect(ofType(events, "task.usage")).toEqual([{ model: "gpt-5.5", ...reported }]);
      expect(done["usage"]).toEqual({ by_model: [{ model: "gpt-5.5", ...reported }], total: reported });

      const child = await s.submit({ prompt: "more", continue_from_task_id: parent });
      const continued = await s.finish(child, RUN_MS);
      expect(continued).toMatchObject({ status: "succeeded", final_response: "second" });
      expect(mock.requests[1]!.body).toMatchObject({ model: "gpt-5.5", reasoning: { effort: "high" } });
      expect((continued["manifest"] as Json)["choices"]).toEqual({ model: "gpt-5.5", effort: "high", max_budget_micro_usd: null });
    },
    RUN_MS * 2,
  );

  test(
    "an app-server that does not answer model/list: listed with its models unknown, a model asked is AGENT_RUNTIME_NOT_READY, a task asking none still runs",
    async () => {
      const dir = tempDir("sfs-scripted-codex-");
      try {
        const mock = startMockOpenAI([]);
        const s = await startStack({ runtime: "codex", mock, runtimeConfig: { bin: scriptedAppServerBin(dir.path) } });
        expect(await runtimeEntry(s)).toMatchObject({ name: "codex", available: true, models: null });
        expect((await refusal(s, { prompt: "x", model: "gpt-5.5" })).code).toBe("AGENT_RUNTIME_NOT_READY");
        const taskId = await s.submit({ profile: "review", prompt: "review" });
        expect(await s.finish(taskId, RUN_MS)).toMatchObject({ status: "succeeded" });
        expect(ofType(await s.events(taskId), "task.started")).toEqual([{ runtime: "codex", model: null, effort: null, max_budget_usd: null }]);
      } finally {
        dir.remove();
      }
    },
    RUN_MS,
  );

  test(
    "with [runtimes.codex] models set, a task that names no model runs the listing's default; with the models unknown it is refused",
    async () => {
      const mock = startMockOpenAI([{ say: "ran" }]);
      const s = await startStack({ runtime: "codex", mock, runtimeConfig: { models: ["gpt-5.5"] } });
      const taskId = await s.submit({ prompt: "go" });
      expect(await s.finish(taskId, RUN_MS)).toMatchObject({ status: "succeeded", final_response: "ran" });
      expect(mock.requests[0]!.body).toMatchObject({ model: "gpt-5.5" });

      const dir = tempDir("sfs-scripted-codex-");
      try {
        const silent = startMockOpenAI([]);
        const t = await startStack({ runtime: "codex", mock: silent, runtimeConfig: { bin: scriptedAppServerBin(dir.path), models: ["gpt-5.5"] } });
        expect((await refusal(t, { profile: "review", prompt: "x" })).code).toBe("AGENT_RUNTIME_NOT_READY");
      } finally {
        dir.remove();
      }
    },
    RUN_MS,
  );
});

describe.skipIf(!CLAUDE_PRESENT)("claude: models from [runtimes.claude] models, --model/--effort/--max-budget-usd, usage from the result", () => {
  test(
    "the configured listing; an unknown model refused before anything starts; model and effort reach the mock; usage and cost on events and task",
    async () => {
      const mock = startMockAnthropic([{ say: "done" }]);
      const s = await startStack({ runtime: "claude", mock, runtimeConfig: { models: ["claude-opus-4-5", "claude-haiku-4-5"] } });
      const efforts = ["low", "medium", "high", "xhigh", "max"];
      expect((await runtimeEntry(s))["models"]).toEqual([
        { model: "claude-opus-4-5", efforts, default_effort: null, is_default: true },
        { model: "claude-haiku-4-5", efforts, default_effort: null, is_default: false },
      ]);
      const unknown = await refusal(s, { prompt: "x", model: "gpt-5.5" });
      expect(unknown).toMatchObject({ code: "INVALID_ARGUMENT" });
      expect(unknown.text).toContain("allowed: claude-opus-4-5, claude-haiku-4-5");
      expect(mock.requests).toHaveLength(0);

      const taskId = await s.submit({ prompt: "go", model: "claude-opus-4-5", effort: "low" });
      const done = await s.finish(taskId, RUN_MS);
      expect(done).toMatchObject({ status: "succeeded", final_response: "done" });
      expect(mock.requests.map((r) => [r.model, r.effort])).toEqual([["claude-opus-4-5", "low"]]);
      const usage = ofType(await s.events(taskId), "task.usage");
      expect(usage).toHaveLength(1);
      expect(usage[0]).toMatchObject({ model: "claude-opus-4-5", input_tokens: 10, output_tokens: 5, cached_input_tokens: 0 });
      expect(usage[0]!["cost_usd"]).toBeGreaterThan(0);
      expect((done["usage"] as Json)["total"]).toEqual({ ...usage[0], model: undefined });
    },
    RUN_MS,
  );

  test(
    "a budget the run exceeds stops it with AGENT_BUDGET_EXCEEDED, its cost recorded",
    async () => {
      const mock = startMockAnthropic([{ tool: "Read", input: { file_path: "README.md" } }, { say: "never reached" }]);
      const s = await startStack({ runtime: "claude", mock });
      const taskId = await s.submit({ prompt: "go", max_budget_usd: 0.00001 });
      const done = await s.finish(taskId, RUN_MS);
      expect(done).toMatchObject({ status: "failed", error_code: "AGENT_BUDGET_EXCEEDED" });
      expect((done["manifest"] as Json)["choices"]).toEqual({ model: "sonnet", effort: null, max_budget_micro_usd: 10 });
      expect(((done["usage"] as Json)["total"] as Json)["cost_usd"]).toBeGreaterThan(0.00001);
      expect(mock.requests).toHaveLength(1);
    },
    RUN_MS,
  );
});
