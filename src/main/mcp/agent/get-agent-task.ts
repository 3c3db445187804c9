/**
 * `get_agent_task` (docs/mcp-tools.md#agent-tool-results): the task object from `task.get`, after any form for its pending request
 * (docs/elicitation.md: a 2025 `elicitation/create`, or on 2026-07-28 an InputRequiredResult and its
 * retry), without native identifiers.
 */
import * as v from "valibot";
import { byteSize } from "../../../shared/byte-size.ts";
import { LIMITS } from "../../../shared/limits.ts";
import type { ToolDef } from "../tool.ts";
import { AGENT_READ, type AgentDeps, proxyTool, taskIdParam } from "./agent-tool.ts";
import { elicitPending } from "./elicitation/elicit-pending.ts";
import { roundTrip } from "./elicitation/round-trip.ts";
import { stripTaskIds, TaskResult } from "./schemas.ts";

export function getAgentTask(deps: AgentDeps): ToolDef {
  return proxyTool(deps, {
    name: "get_agent_task",
    title: "Get an agent task",
    description: `The task's status, timestamps, result facts (storage, size, sha256), any pending approval or question, the manifest and final_response (the inline text, or a ${byteSize(LIMITS.result_preview_bytes)} preview of a spooled one, which read_agent_task_result reads whole), in that order.`,
    annotations: AGENT_READ,
    input: v.strictObject({ task_id: taskIdParam() }),
    output: TaskResult,
    bulk: ["pending_request", "manifest", "final_response"],
    method: "task.get",
    params: (a) => ({ task_id: a.task_id }),
    settle: async (a, task, call) => (call.rounds ? await roundTrip(deps, call, a.task_id, task) : await elicitPending(deps, call, a.task_id, task)).task,
    present: stripTaskIds,
    audit: (_a, r, call) => {
      call.audit["status"] = r.status;
    },
  });
}
