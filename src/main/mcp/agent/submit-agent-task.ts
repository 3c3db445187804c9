/**
 * `submit_agent_task` (docs/mcp-tools.md#mcp-side-checks): before the one RPC, the MCP side refuses what it can
 * already see — unknown workdir, disabled agent mode, a runtime or profile the workdir does not
 * allow, and a start directory that fails confinement or a real no-follow traversal. The Bridge
 * re-validates everything; its codes pass through. A client may also call it as an MCP task
 * (docs/mcp-tasks.md): the same checks and RPC, answered with the Bridge task as an MCP task.
 */
import * as v from "valibot";
import { modeRank } from "../../../shared/config/load.ts";
import { ServerFsError } from "../../../shared/errors.ts";
import { closeQuietly, openDirPath } from "../../../shared/fs/dir-handle.ts";
import { LIMITS } from "../../../shared/limits.ts";
import { opaqueValue } from "../../../shared/opaque-value.ts";
import { byteLength } from "../../../shared/utf8.ts";
import { requireWorkspace } from "../deps.ts";
import { choiceParam, pathParam, textParam, withDefault, workdirParam } from "../params.ts";
import { defineTool, type ToolDef } from "../tool.ts";
import { AGENT_AUDIT, type AgentDeps, agentAnnotations, opaqueTextParam } from "./agent-tool.ts";
import { SubmitResult } from "./schemas.ts";

export function submitAgentTask(deps: AgentDeps): ToolDef {
  const runtimes = ["codex", "claude", ...(deps.config.bridge.enable_fake_runtime ? ["fake"] : [])];
  return defineTool({
    name: "submit_agent_task",
    title: "Submit an agent task",
    description:
      "Delegate a task to a coding agent (codex, claude) in a workdir. Returns at once with status queued; follow it with read_agent_task_events and get_agent_task. correlation_id is opaque metadata; idempotency_key makes a retry return the same task.",
    annotations: agentAnnotations(false, true, false),
    input: v.strictObject({
      runtime: choiceParam(runtimes, "The coding agent to run; the workdir's agent_runtimes must allow it."),
      workdir: workdirParam(),
      prompt: textParam(`The task for the agent, at most ${LIMITS.max_prompt_bytes} UTF-8 bytes.`),
      path: withDefault(pathParam("The directory the agent starts in."), ""),
      profile: withDefault(
        choiceParam(["review", "workspace-write"], "review only reads; workspace-write may change files. It may not outrank the workdir's agent_mode."),
        "workspace-write",
      ),
      continue_from_task_id: v.optional(textParam("A finished task of the same runtime and workdir whose session this task continues.")),
      model: v.optional(
        textParam("The model to run, one list_agent_runtimes lists for this runtime; absent: the runtime's default (a continuation keeps its parent's)."),
      ),
      effort: v.optional(
        textParam("The reasoning effort, one the model supports (list_agent_runtimes); absent: the model's default (a continuation keeps its parent's)."),
      ),
      max_budget_usd: v.optional(
        v.pipe(
          v.number("must be a number"),
          v.minValue(0.000001, "must be above 0"),
          v.maxValue(1_000_000, "must be at most 1000000"),
          v.description("claude only: US dollars, from 0.000001 to 1000000; the run stops (AGENT_BUDGET_EXCEEDED) once it has spent this much."),
        ),
      ),
      correlation_id: opaqueTextParam("Opaque metadata echoed in results and events."),
      idempotency_key: opaqueTextParam("A retry with the same key and the same request returns the existing task instead of a new one."),
    }),
    output: SubmitResult,
    unexpected: "AGENT_BRIDGE_ERROR",
    auditFields: AGENT_AUDIT,
    taskSupport: "optional",
    async run(args, call) {
      const correlationId = opaqueValue(args.correlation_id, "correlation_id", "INVALID_ARGUMENT");
      const idempotencyKey = opaqueValue(args.idempotency_key, "idempotency_key", "INVALID_ARGUMENT");
      Object.assign(call.audit, {
        correlation_id: correlationId ?? null,
        runtime: args.runtime,
        profile: args.profile,
        idempotency_key: idempotencyKey ?? null,
        continue_from_task_id: args.continue_from_task_id ?? null,
        model: args.model ?? null,
        effort: args.effort ?? null,
        max_budget_usd: args.max_budget_usd ?? null,
        prompt_bytes: byteLength(args.prompt),
      });
      const ws = requireWorkspace(deps, args.workdir);
      const policy = ws.policy;
      if (policy.agent_mode === "disabled") throw new ServerFsError("AGENT_DISABLED", "agent tasks are disabled for this workdir");
      if (!(policy.agent_runtimes as string[]).includes(args.runtime)) {
        throw new ServerFsError("AGENT_RUNTIME_NOT_ALLOWED", "this runtime is not allowed for this workdir");
      }
      if (modeRank(args.profile) > modeRank(policy.agent_mode)) {
        throw new ServerFsError("AGENT_PROFILE_NOT_ALLOWED", "this profile outranks the workdir's agent mode");
      }
      const { path, segments } = ws.confine(args.path);
      call.audit["path"] = path;
      closeQuietly(openDirPath(ws.realRoot, segments, { where: ws.where(path), side: "read" }));

      const { replayed, ...result } = await deps.bridge(
        "task.submit",
        {
          runtime: args.runtime,
          workdir: ws.alias,
          path,
          profile: args.profile,
          prompt: args.prompt,
          ...(args.continue_from_task_id ? { continue_from_task_id: args.continue_from_task_id } : {}),
          ...(args.model !== undefined ? { model: args.model } : {}),
          ...(args.effort !== undefined ? { effort: args.effort } : {}),
          ...(args.max_budget_usd !== undefined ? { max_budget_usd: args.max_budget_usd } : {}),
          ...(correlationId ? { correlation_id: correlationId } : {}),
          ...(idempotencyKey ? { idempotency_key: idempotencyKey } : {}),
          ...(call.identity ? { submitter: { sub: call.identity.sub, client_id: call.identity.clientId } } : {}),
        },
        { signal: call.signal },
      );
      // the tasks whose requests this session may be asked (docs/elicitation.md): an idempotent replay
      // returns the task but never makes this session its submitter
      if (!replayed) call.session.submitted.add(result.task_id);
      Object.assign(call.audit, { task_id: result.task_id, status: result.status, correlation_id: result.correlation_id });
      return result;
    },
  });
}
