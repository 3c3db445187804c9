/**
 * What a human-in-the-loop request says in full (docs/agent-requests.md), as the parts a person reads
 * to decide, for every surface that shows one as text: the elicitation form's message and
 * `serverfs tasks show`. Each surface lays the parts out and bounds them its own way; the parts say
 * what is there, in the order it matters.
 *
 * An approval: the command, how the runtime runs it and where (`relative_cwd`; `null` is an unknown
 * directory), that it runs outside the sandbox, the agent's reason, the MCP server, the tool and its
 * input, the path the runtime asked about, each requested permission, then the files with their
 * change kinds and rename targets, then each file's diff (a withheld diff, or one the request's diff
 * budget left out, is said so, never shown). A question: each question with its id, then its options
 * with their ids, labels and descriptions, and whether it takes several options or free text.
 *
 * Offers `requestParts(kind, payload)` → `RequestPart[]`.
 */
import { list, str } from "./request-summary.ts";

type Json = Record<string, unknown>;

export type RequestPart =
  /** One fact; `max` is the most of it worth showing (a tool's input must not crowd out the rest). */
  | { type: "line"; text: string; max?: number }
  /** A unified diff of one file; `cut` when the Bridge cut it to its bound. */
  | { type: "diff"; path: string; text: string; cut: boolean };

/** A tool's input is shown, but never crowds out the rest. */
const TOOL_INPUT_BYTES = 2048;
const PERMISSION_DETAILS_BYTES = 512;

const line = (text: string, max?: number): RequestPart => (max === undefined ? { type: "line", text } : { type: "line", text, max });

function approvalParts(payload: Json): RequestPart[] {
  const parts: RequestPart[] = [];
  // the command as the model asked for it, else the command line the runtime runs
  const command = str(payload["command"]);
  const display = str(payload["command_display"]);
  if (command ?? display) parts.push(line(`Command: ${command ?? display}`));
  if (command && display && display !== command) parts.push(line(`Runs as: ${display}`));
  const cwd = payload["relative_cwd"];
  if (cwd === null) parts.push(line("In: an unknown directory (the runtime could not say for certain)"));
  else if (str(cwd)) parts.push(line(`In: ${String(cwd)}`));
  if (payload["outside_sandbox"] === true) parts.push(line("It runs outside the sandbox: once approved, nothing confines it to the workdir."));
  const reason = str(payload["reason"]);
  if (reason) parts.push(line(`Reason: ${reason}`));
  const server = str(payload["server"]);
  if (server) parts.push(line(`MCP server: ${server}`));
  const tool = str(payload["tool"]);
  if (tool) parts.push(line(`Tool: ${tool}`));
  if (payload["tool_input"] !== undefined)
    parts.push(line(`Tool input${payload["tool_input_truncated"] === true ? " (cut)" : ""}: ${JSON.stringify(payload["tool_input"])}`, TOOL_INPUT_BYTES));
  const blocked = str(payload["blocked_path"]);
  if (blocked) parts.push(line(`Path asked about: ${blocked}`));
  list(payload["requested_permissions"]).forEach((p, i) => {
    parts.push(line(`Permission ${i + 1}: ${String(p["kind"])} ${JSON.stringify(p["details"] ?? {})}`, PERMISSION_DETAILS_BYTES));
  });
  const files = list(payload["file_changes"]);
  if (files.length > 0) {
    parts.push(line(`Files (${files.length}):`));
    for (const f of files) parts.push(line(`  ${String(f["kind"])} ${String(f["path"])}${str(f["new_path"]) ? ` → ${String(f["new_path"])}` : ""}`));
    for (const f of files) {
      const path = String(f["path"]);
      const diff = str(f["diff"]);
      if (f["withheld"] === true) parts.push(line(`(the diff of ${path} is withheld)`));
      else if (diff) parts.push({ type: "diff", path, text: diff, cut: f["truncated"] === true });
      else if (f["truncated"] === true) parts.push(line(`(the diff of ${path} is left out: the request's diffs reached their bound)`));
    }
  }
  return parts;
}

function questionParts(payload: Json): RequestPart[] {
  return list(payload["questions"]).flatMap((q, i) => {
    const options = list(q["options"]);
    const choice = q["multi_select"] === true ? "one or more options" : "one option";
    const how = options.length === 0 ? "free text" : `${choice}${q["allow_free_text"] === true ? " or free text" : ""}`;
    return [
      line(`Question ${String(q["question_id"] ?? i + 1)}: ${str(q["prompt"]) ?? `question ${i + 1}`}`),
      ...options.map((o) => line(`  ${String(o["option_id"])}: ${String(o["label"])}${str(o["description"]) ? ` (${String(o["description"])})` : ""}`)),
      line(`  answer with ${how}`),
    ];
  });
}

export function requestParts(kind: "approval" | "question", payload: Json): RequestPart[] {
  return kind === "approval" ? approvalParts(payload) : questionParts(payload);
}
