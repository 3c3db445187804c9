/**
 * The real Claude Code as a host that shows forms (docs/elicitation.md), offline: the scripted
 * Messages mock makes it submit an `approval:` task on the `fake` runtime through ServerFS and then
 * call get_agent_task; ServerFS asks the pending approval, which Claude in `-p` stream-json mode
 * forwards to its controlling program (this test) as a `control_request` of subtype `elicitation`. The
 * test answers it with a `control_response`, and the task goes on with that decision. It runs twice:
 * with the default `[server] protocol_revisions`, where Claude's `server/discover` probe is answered and
 * the form travels as an InputRequiredResult and its retry (revision 2026-07-28), and pinned to
 * 2025-11-25, where it is an `elicitation/create` request (docs/elicitation.md#protocol-revisions).
 * Without the CLI the file is skipped loudly, except under CI=true.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { SERVER_NAME } from "../../src/main/operator/host-setup.ts";
import { CLAUDE_BIN, CLAUDE_PRESENT, claudeHostEnv, cliMissing, stopHostRun } from "../fixtures/agent-stack.ts";
import { type MockAnthropic, startMockAnthropic, toolResults } from "../fixtures/mock-anthropic.ts";
import { type BridgeEnv, type BridgeProcess, bridgeEnv, call, startBridgeProcess } from "../helpers/bridge.ts";
import { runCli } from "../helpers/process.ts";
import type { Table } from "../helpers/toml.ts";
import { submittedTaskId } from "./scenario.ts";

if (!CLAUDE_PRESENT) cliMissing("Claude Code", CLAUDE_BIN, "npm install --no-save @anthropic-ai/claude-code@2.1.332");

const ALLOW = `mcp__${SERVER_NAME}`;
const PREFIX = `${ALLOW}__`;
const RUN_MS = 120_000;

type Json = Record<string, unknown>;

/**
 * One host run under `config`; `roundTrip` says whether the form must have travelled as a
 * multi-round-trip request, which signs its state with the key it creates in the Bridge's state
 * directory (a 2025 form needs no key).
 */
function hostRun(title: string, config: Table, roundTrip: boolean): void {
  describe.skipIf(!CLAUDE_PRESENT)(title, () => {
    let env: BridgeEnv;
    let bridge: BridgeProcess;
    let mock: MockAnthropic;
    let home: string;
    const controlRequests: Json[] = [];
    let taskId = "";
    let polls = 0;

    beforeAll(async () => {
      env = bridgeEnv({ config });
      bridge = await startBridgeProcess(env);
      mock = startMockAnthropic([
        { tool: `${PREFIX}submit_agent_task`, input: { runtime: "fake", workdir: "repo", profile: "review", prompt: "approval:echo from-claude" } },
        // a model polling until the task has left its start: the call that sees the approval asks it
        {
          poll: (request) =>
            polls++ > 0 && !/"status":"(queued|starting|running)"/.test(toolResults(request).at(-1)?.text ?? "")
              ? null
              : { tool: `${PREFIX}get_agent_task`, input: { task_id: submittedTaskId(toolResults(request)) } },
        },
        { say: "done" },
      ]);
      const host = claudeHostEnv(mock);
      home = host.home;
      const hostEnv = host.env;
      const connected = await runCli(["connect", "claude-code", "--write", "--config", env.configPath], { env: hostEnv });
      expect(connected.code).toBe(0);

      const proc = Bun.spawn([CLAUDE_BIN, "-p", "--verbose", "--input-format", "stream-json", "--output-format", "stream-json", "--allowedTools", ALLOW], {
        cwd: env.workspace,
        env: { ...process.env, ...hostEnv },
        stdin: "pipe",
        stdout: "pipe",
        stderr: "pipe",
      });
      const timer = setTimeout(() => proc.kill("SIGKILL"), RUN_MS);
      const send = (message: Json) => {
        proc.stdin.write(`${JSON.stringify(message)}\n`);
        proc.stdin.flush();
      };
      send({ type: "user", message: { role: "user", content: "use the serverfs tools" } });
      const decoder = new TextDecoder();
      let buffered = "";
      for await (const chunk of proc.stdout) {
        buffered += decoder.decode(chunk, { stream: true });
        let nl = buffered.indexOf("\n");
        while (nl >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          nl = buffered.indexOf("\n");
          if (!line.startsWith("{")) continue;
          const message = JSON.parse(line) as Json;
          const request = message["request"] as Json | undefined;
          if (message["type"] === "control_request" && request?.["subtype"] === "elicitation") {
            controlRequests.push(request);
            send({
              type: "control_response",
              response: { subtype: "success", request_id: message["request_id"], response: { action: "accept", content: { decision: "approve_once" } } },
            });
          }
          if (message["type"] === "result") proc.stdin.end();
        }
      }
      clearTimeout(timer);
      await proc.exited;
      taskId = submittedTaskId(toolResults(mock.requests.at(-1)!));
    }, RUN_MS + 30_000);

    afterAll(() => stopHostRun({ bridge, mock, env, home }));

    test("the approval arrives as a control_request of subtype elicitation, naming the server and the command", () => {
      expect(controlRequests).toHaveLength(1);
      expect(controlRequests[0]!["mcp_server_name"]).toBe(SERVER_NAME);
      expect(String(controlRequests[0]!["message"])).toContain("echo from-claude");
      const schema = controlRequests[0]!["requested_schema"] as { properties: Record<string, Json> };
      expect(schema.properties["decision"]!["enum"]).toContain("approve_once");
    });

    test("the answer reached the task: it ends with the decision given on stdin", async () => {
      const task = await call<Json>(env.socketPath, "task.get", { task_id: taskId });
      expect(task["status"]).not.toBe("waiting_for_approval");
      const events = await call<{ events: Json[] }>(env.socketPath, "task.events", { task_id: taskId, after_event_id: 0, limit: 100 });
      const resolved = events.events.find((e) => e["event_type"] === "approval.resolved");
      expect((resolved?.["payload"] as Json | undefined)?.["decision"]).toBe("approve_once");
    });

    test(roundTrip ? "the form travelled as an InputRequiredResult and its retry" : "the form travelled as an elicitation/create request", () => {
      expect(existsSync(join(env.stateDir, "mcp-request-state.key"))).toBe(roundTrip);
    });
  });
}

hostRun("Claude Code forwards ServerFS's form to its controlling program (default revisions: 2026-07-28)", {}, true);
hostRun("Claude Code forwards ServerFS's form to its controlling program (pinned to 2025-11-25)", { server: { protocol_revisions: ["2025-11-25"] } }, false);
