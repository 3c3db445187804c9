/**
 * A real Codex approval asked as a form (docs/elicitation.md): the scripted Responses mock, `codex
 * app-server` under `untrusted`, a real `serverfs bridge` and a `serverfs mcp` whose SDK Client declares
 * form elicitation. The form offers exactly the decisions the request offers.
 */
import { expect, test } from "bun:test";
import { type ElicitRequest, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { isTerminal, ok, waitForTask } from "../e2e/support.ts";
import { CODEX_BIN, CODEX_PRESENT, cliMissing, stackPerTest } from "../fixtures/agent-stack.ts";
import { startMockOpenAI } from "../fixtures/mock-openai.ts";
import { startStdio } from "../helpers/mcp-client.ts";

if (!CODEX_PRESENT) cliMissing("Codex", CODEX_BIN, "npm install --no-save @openai/codex@0.171.0");

const startStack = stackPerTest();

test.skipIf(!CODEX_PRESENT)(
  "under untrusted Codex offers accept and cancel: the form offers approve_once, deny and cancel_task and names no other decision",
  async () => {
    const mock = startMockOpenAI([{ exec: "echo x" }, { say: "denied", phase: "final_answer" }]);
    const s = await startStack({ runtime: "codex", mock, runtimeConfig: { approval_policy: "untrusted" } });
    const human = await startStdio(s.env.configPath, {}, [], { elicitation: {} });
    try {
      const forms: ElicitRequest["params"][] = [];
      human.client.setRequestHandler(ElicitRequestSchema, async (request) => {
        forms.push(request.params);
        return { action: "accept", content: { decision: "deny" } };
      });
      const { task_id: id } = await ok<{ task_id: string }>(human, "submit_agent_task", { runtime: "codex", workdir: "repo", prompt: "echo" });
      expect(await waitForTask(human, id, isTerminal, 60_000)).toMatchObject({ status: "succeeded", final_response: "denied" });
      expect(forms).toHaveLength(1);
      const form = forms[0]!;
      const decision = ("requestedSchema" in form ? form.requestedSchema.properties["decision"] : {}) as Record<string, unknown>;
      expect(decision["enum"]).toEqual(["approve_once", "deny", "cancel_task"]);
      expect(JSON.stringify(form)).not.toContain("approve_session");
    } finally {
      await human.close();
    }
  },
  120_000,
);
