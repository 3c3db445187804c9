/**
 * `answer_agent_question` (docs/mcp-tools.md#agent-tool-parameters): the answers to a pending question request, one
 * `task.question.answer`.
 */
import * as v from "valibot";
import { listParam, nonEmptyListParam, textParam, withDefault } from "../params.ts";
import type { ToolDef } from "../tool.ts";
import { type AgentDeps, agentAnnotations, proxyTool, taskIdParam } from "./agent-tool.ts";
import { ResolvedResult } from "./schemas.ts";

export function answerAgentQuestion(deps: AgentDeps): ToolDef {
  return proxyTool(deps, {
    name: "answer_agent_question",
    title: "Answer an agent question",
    description: "Answer every question of a pending question request with option ids and, where allowed, free text.",
    annotations: agentAnnotations(false, false, true),
    input: v.strictObject({
      task_id: taskIdParam(),
      request_id: textParam("The pending question's request_id, from get_agent_task or its event."),
      answers: nonEmptyListParam(
        v.strictObject({
          question_id: textParam("The question this answers."),
          selected_option_ids: withDefault(
            listParam(textParam("An option id."), "The chosen options' ids (at most one unless the question is multi_select)."),
            [],
          ),
          text: v.optional(textParam("Free text, only where the question allows it.")),
        }),
        "One answer for every question of the request.",
      ),
    }),
    output: ResolvedResult,
    method: "task.question.answer",
    params: (a) => ({ task_id: a.task_id, request_id: a.request_id, answers: a.answers }),
    audit: (a, _r, call) => {
      Object.assign(call.audit, { request_id: a.request_id, answer_count: a.answers.length });
    },
  });
}
