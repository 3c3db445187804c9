/**
 * An approval as a form (docs/elicitation.md): the message says what the step will do — its summary,
 * the command and where it runs, the files with their change kinds and then their diffs (a withheld
 * diff is said to be withheld), that a command runs outside the sandbox, the MCP server, the tool and
 * its input, the permissions — and the form offers the request's decisions and no other, each
 * explained, plus one checkbox per requested permission.
 */
import { DECISIONS, type Decision } from "../../../../shared/hitl-validation.ts";
import { type Json, list, type PendingForm, text } from "./form-kit.ts";
import { FormMessage } from "./form-message.ts";

/** A tool's input is shown, but never crowds out the rest of the message. */
const TOOL_INPUT_BYTES = 2048;
const PERMISSION_DETAILS_BYTES = 512;

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
  const command = text(payload["command"]);
  if (command) message.add(`Command: ${command}`);
  const display = text(payload["command_display"]);
  if (display && display !== command) message.add(`Runs as: ${display}`);
  const cwd = text(payload["relative_cwd"]);
  if (cwd) message.add(`In: ${cwd}`);
  if (payload["outside_sandbox"] === true) message.add("It runs outside the sandbox: once approved, nothing confines it to the workdir.");
  const reason = text(payload["reason"]);
  if (reason) message.add(`Reason: ${reason}`);
  const server = text(payload["server"]);
  if (server) message.add(`MCP server: ${server}`);
  const tool = text(payload["tool"]);
  if (tool) message.add(`Tool: ${tool}`);
  if (payload["tool_input"] !== undefined)
    message.add(`Tool input${payload["tool_input_truncated"] === true ? " (cut)" : ""}: ${JSON.stringify(payload["tool_input"])}`, TOOL_INPUT_BYTES);
  const blocked = text(payload["blocked_path"]);
  if (blocked) message.add(`Path asked about: ${blocked}`);
  permissions.forEach((p, i) => {
    message.add(`Permission ${i + 1}: ${String(p["kind"])} ${JSON.stringify(p["details"] ?? {})}`, PERMISSION_DETAILS_BYTES);
  });
  const files = list(payload["file_changes"]);
  if (files.length > 0) {
    message.add(`Files (${files.length}):`);
    for (const f of files) message.add(`  ${String(f["kind"])} ${String(f["path"])}${text(f["new_path"]) ? ` → ${String(f["new_path"])}` : ""}`);
    for (const f of files) {
      if (f["withheld"] === true) message.add(`(the diff of ${String(f["path"])} is withheld)`);
      else if (text(f["diff"])) message.add(`${String(f["diff"])}${f["truncated"] === true ? "\n(diff cut)" : ""}`);
    }
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
