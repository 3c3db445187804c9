/**
 * An approval as a form (docs/elicitation.md): the message says what the step will do — its summary,
 * then the parts `tasks show` prints too (src/shared/request-details.ts): the command and where it
 * runs, that it runs outside the sandbox, the MCP server, the tool and its input, the permissions, the
 * files with their change kinds and then their diffs (a withheld diff is said to be withheld) — and
 * the form offers the request's decisions and no other, each explained, plus one checkbox per
 * requested permission.
 */
import { DECISIONS, type Decision } from "../../../../shared/hitl-validation.ts";
import { requestParts } from "../../../../shared/request-details.ts";
import { type Json, list, type PendingForm, text } from "./form-kit.ts";
import { FormMessage } from "./form-message.ts";

const DECISION_HELP: Record<Decision, string> = {
  approve_once: "approve_once: allow this step",
  approve_session: "approve_session: allow it for the rest of the session",
  deny: "deny: the step does not happen and the agent goes on",
  cancel_task: "cancel_task: the step does not happen and the task is cancelled",
};

/**
 * The decisions the request offers, in the usual order; an empty list offers all four
 * (docs/task-model.md#human-in-the-loop-requests). A value that is no decision is never offered.
 */
function offeredDecisions(payload: Json): Decision[] {
  const offered = payload["available_decisions"];
  if (!Array.isArray(offered) || offered.length === 0) return [...DECISIONS];
  return DECISIONS.filter((d) => offered.includes(d));
}

export function approvalForm(taskId: string, requestId: string, payload: Json): PendingForm {
  const decisions = offeredDecisions(payload);
  const permissions = list(payload["requested_permissions"]);

  const message = new FormMessage()
    .add(`An agent task asks for approval (task ${taskId}, request ${requestId}).`)
    .add(text(payload["summary"]) ?? text(payload["title"]) ?? "Approve a step");
  for (const part of requestParts("approval", payload)) {
    if (part.type === "line") message.add(part.text, part.max);
    else message.add(`${part.text}${part.cut ? "\n(diff cut)" : ""}`);
  }

  const grants = permissions.map((p, i) => [`grant_${i + 1}`, String(p["permission_id"])] as const);
  return {
    form: {
      message: message.toString(),
      requestedSchema: {
        type: "object",
        properties: {
          decision: {
            type: "string",
            title: "Decision",
            description: `${decisions.map((d) => DECISION_HELP[d]).join("; ")}.`,
            enum: decisions,
          },
          ...Object.fromEntries(
            grants.map(([key], i) => [key, { type: "boolean", title: `Grant permission ${i + 1} (${String(permissions[i]!["kind"])})`, default: true }]),
          ),
        },
        required: ["decision"],
      },
    },
    answer(content) {
      const decision = decisions.find((d) => d === content["decision"]);
      if (decision === undefined) return null;
      const granted = grants.filter(([key]) => content[key] !== false).map(([, id]) => id);
      return {
        method: "task.approval.respond",
        decision,
        params: {
          task_id: taskId,
          request_id: requestId,
          decision,
          ...(permissions.length > 0 ? { granted_permission_ids: granted } : {}),
        },
      };
    },
  };
}
