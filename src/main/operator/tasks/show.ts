/**
 * `serverfs tasks show <task_id> [--json]`: the task object, with the final response only as a short
 * preview, the model, effort and budget it was given and what it used, and its pending request in
 * full (request-lines.ts), so an operator can judge it before `tasks approve|deny|answer`.
 */
import type { BridgeClient } from "../../../shared/bridge-protocol/client.ts";
import type { TaskObjectResult as Task } from "../../../shared/bridge-protocol/results.ts";
import { requestSummary, str } from "../../../shared/request-summary.ts";
import { cutUtf8 } from "../../../shared/utf8.ts";
import { paint, printJson, printLine, table, visible } from "../output.ts";
import { getTask, status } from "./bridge-calls.ts";
import { requestLines } from "./request-lines.ts";
import { choicesSummary, usageSummary } from "./usage.ts";

/** How much of a final response `show` prints; the whole text is the MCP client's to read. */
const PREVIEW_BYTES = 1024;

function preview(task: Task): { text: string; cut: boolean } | null {
  if (task.final_response === null) return null;
  const { text, truncated } = cutUtf8(task.final_response, PREVIEW_BYTES);
  // a spooled result's final_response is already the Bridge's own preview of a longer text
  return { text, cut: truncated || task.final_response_truncated };
}

/** What is true of the result in each state: never a bare "none yet" for a task that has ended. */
function resultSummary(task: Task): string {
  const r = task.result;
  if (r.size_bytes !== null) {
    const where = r.storage === "inline" ? "inline" : r.retrievable ? "spooled, retrievable with read_agent_task_result" : "spooled, no longer retrievable";
    return `${where}, ${r.size_bytes} bytes, sha256 ${r.sha256 ?? "unknown"}`;
  }
  const why = task.error_code === null ? "" : ` (${task.error_code})`;
  switch (task.status) {
    case "succeeded":
      return task.manifest_sha256 === null
        ? "none recorded (a task migrated from v0.6, which kept no result)"
        : "none (the agent ended without a final response)";
    case "failed":
      return `none: the task failed${why}`;
    case "cancelled":
      return "none: the task was cancelled before a final response";
    case "interrupted":
      return `none: the task was interrupted${why}`;
    default:
      return "none yet: the task has not ended";
  }
}

/** The open request in one line: its kind, id, status, expiry and summary; `request` below says the rest. */
function pendingSummary(task: Task): string | null {
  const p = task.pending_request;
  if (p === null) return task.pending_request_id;
  const summary = str(p.payload["summary"]) ?? requestSummary(p.kind, p.payload);
  const where = p.payload["outside_sandbox"] === true ? " (outside the sandbox)" : "";
  return `${p.kind} ${p.request_id} (${p.status}, expires ${p.expires_at ?? "never"}): ${summary}${where}`;
}

export async function show(client: BridgeClient, taskId: string, json: boolean): Promise<number> {
  const task = await getTask(client, taskId);
  const response = preview(task);
  if (json) {
    // the task object as task.get has it, but the final response only as the preview
    printJson({ ...task, final_response: response?.text ?? null, final_response_preview_cut: response?.cut ?? false });
    return 0;
  }
  const fields: [string, string | null][] = [
    ["task", task.task_id],
    ["status", status(task.status)],
    ["runtime", task.runtime],
    ["workdir", `${task.workdir_alias} (slot ${task.workdir_slot}), start directory ${task.relative_cwd === "" ? "." : task.relative_cwd}`],
    ["profile", task.profile],
    ["model", choicesSummary(task)],
    ["usage", usageSummary(task.usage)],
    ["created", task.created_at],
    ["started", task.started_at],
    ["updated", task.updated_at],
    ["completed", task.completed_at],
    ["deadline", task.deadline_at],
    ["continues", task.continue_from_task_id],
    ["correlation", task.correlation_id],
    ["idempotency", task.idempotency_key],
    ["error", task.error_code === null ? null : `${task.error_code}: ${task.error_message ?? ""}`.trimEnd()],
    ["result", resultSummary(task)],
    ["pending", pendingSummary(task)],
    ["manifest", task.manifest_sha256 === null ? "none (migrated task)" : `sha256 ${task.manifest_sha256}`],
  ];
  // what a runtime, an agent or a client wrote (a model name, an error message, a correlation id, a
  // request's summary) is shown escaped; the status is this command's own, perhaps coloured
  const rows = fields.filter((f): f is [string, string] => f[1] !== null).map(([name, value]) => [name, name === "status" ? value : visible(value)]);
  for (const line of table(rows)) printLine(line);
  if (task.pending_request !== null) {
    printLine("request");
    for (const line of requestLines(task.pending_request.kind, task.pending_request.payload)) printLine(line);
  }
  if (response !== null) {
    printLine("response");
    // the agent's own lines, each behind the indent, none able to move the cursor or recolour the terminal
    for (const line of response.text.split("\n")) printLine(`  ${visible(line)}`);
    if (response.cut) printLine(paint("dim", `  … (preview; the whole result is ${task.result.size_bytes ?? "?"} bytes)`));
  }
  return 0;
}
