/**
 * Claude's permission prompts in the Bridge's terms (docs/runtimes.md#claude, docs/task-model.md#human-in-the-loop-requests): a
 * `can_use_tool` request becomes an approval payload, or a question payload for `AskUserQuestion`,
 * and a human's resolution becomes the `control_response` the CLI expects.
 *
 * Offers: `toolCategory(name)`, `isQuestionTool(name)`, `approvalFor(request, cwd, shellCwd)`,
 * `approvalAnswer(request, resolution)`, `questionFor(request)` (null when the input has no usable
 * questions), `questionAnswer(request, resolution)`, `DENIED`.
 */
import { resolve } from "node:path";
import type { PermissionDeny, PermissionResponse, ToolRequest } from "./claude-wire.ts";
import type { ApprovalPayload, ApprovalResolution, ProposedChange, ProposedFileChange, QuestionPayload, QuestionResolution } from "./types.ts";

export const DENIED: PermissionDeny = { behavior: "deny", message: "Denied by the remote user" };

const EDIT_TOOLS = new Set(["Write", "Edit", "MultiEdit", "NotebookEdit"]);
const NETWORK_TOOLS = new Set(["WebFetch", "WebSearch"]);

export const isQuestionTool = (name: string): boolean => name === "AskUserQuestion";
export const isEditTool = (name: string): boolean => EDIT_TOOLS.has(name);

export function toolCategory(name: string): ApprovalPayload["category"] {
  if (name === "Bash") return "command";
  if (EDIT_TOOLS.has(name)) return "file_change";
  if (NETWORK_TOOLS.has(name)) return "network_permission";
  if (name.startsWith("mcp__")) return "mcp_tool";
  return "other";
}

const TITLES: Record<ApprovalPayload["category"], string> = {
  command: "Run a command",
  file_change: "Change files",
  filesystem_permission: "Access files",
  network_permission: "Access the network",
  mcp_tool: "Use an MCP tool",
  provider_permission: "Grant a permission",
  other: "Use a tool",
};

const stringField = (input: Record<string, unknown>, key: string): string | undefined => (typeof input[key] === "string" ? (input[key] as string) : undefined);

/** The files an edit tool names (Write/Edit/MultiEdit take `file_path`, NotebookEdit `notebook_path`). */
export function editedPaths(input: Record<string, unknown>): string[] {
  const path = stringField(input, "file_path") ?? stringField(input, "notebook_path");
  return path === undefined ? [] : [path];
}

type Edit = NonNullable<ProposedChange["edits"]>[number];

function edit(raw: unknown): Edit | null {
  if (typeof raw !== "object" || raw === null) return null;
  const r = raw as Record<string, unknown>;
  if (typeof r["old_string"] !== "string" || typeof r["new_string"] !== "string") return null;
  return { old_string: r["old_string"], new_string: r["new_string"], replace_all: r["replace_all"] === true };
}

/** What an edit tool proposes: Write the whole content, Edit / MultiEdit replacements, NotebookEdit only its path. */
function proposedChanges(tool: string, input: Record<string, unknown>): ProposedFileChange[] {
  const [path] = editedPaths(input);
  if (path === undefined) return [];
  const content = stringField(input, "content");
  if (tool === "Write" && content !== undefined) return [{ path, change: { write: content } }];
  const raw = tool === "MultiEdit" && Array.isArray(input["edits"]) ? (input["edits"] as unknown[]) : [input];
  const edits = raw.map(edit);
  if (tool !== "NotebookEdit" && edits.length > 0 && edits.every((e) => e !== null)) {
    return [{ path, kind: "update", change: { edits: edits as Edit[] } }];
  }
  return [{ path, kind: "update" }];
}

/** The CLI's suggestions that stay within this session: the only ones `approve_session` may grant. */
const sessionSuggestions = (request: ToolRequest): unknown[] => request.permission_suggestions.filter((s) => s.destination === "session");

/**
 * `cwd` is the task's start directory, `shellCwd` where a Bash call runs (the shell's directory) or null
 * when that cannot be known for certain.
 */
export function approvalFor(request: ToolRequest, cwd: string, shellCwd: string | null): ApprovalPayload {
  const category = toolCategory(request.tool_name);
  const payload: ApprovalPayload = {
    category,
    title: TITLES[category],
    tool: request.tool_name,
    available_decisions:
      sessionSuggestions(request).length > 0 ? ["approve_once", "approve_session", "deny", "cancel_task"] : ["approve_once", "deny", "cancel_task"],
  };
  if (request.description !== undefined) payload.reason = request.description;
  const command = stringField(request.input, "command");
  if (category === "command" && command !== undefined) payload.command_display = command;
  if (category === "command") payload.relative_cwd = shellCwd;
  // from the task's start directory, as the CLI reports it; the worker then puts it where it lands
  // (links followed), and one outside gets the request declined without asking anyone
  if (request.blocked_path !== undefined) payload.blocked_path = resolve(cwd, request.blocked_path);
  if (category === "command" && command !== undefined) payload.command = command;
  // an edit's input carries file contents: they reach the human only as the Bridge's bounded diff
  if (category === "file_change") payload.file_changes = proposedChanges(request.tool_name, request.input);
  else if (category !== "command") payload.tool_input = request.input;
  return payload;
}

export function approvalAnswer(request: ToolRequest, resolution: ApprovalResolution): PermissionResponse {
  switch (resolution.decision) {
    case "approve_once":
      return { behavior: "allow", updatedInput: request.input };
    case "approve_session":
      return { behavior: "allow", updatedInput: request.input, updatedPermissions: sessionSuggestions(request) };
    case "deny":
      return DENIED;
    case "cancel_task":
      return { ...DENIED, interrupt: true };
  }
}

interface AskedQuestion {
  question: string;
  options: { label: string; description?: string }[];
  multiSelect: boolean;
}

function askedQuestions(input: Record<string, unknown>): AskedQuestion[] | null {
  const raw = input["questions"];
  if (!Array.isArray(raw) || raw.length === 0) return null;
  const out: AskedQuestion[] = [];
  for (const q of raw as unknown[]) {
    if (typeof q !== "object" || q === null) return null;
    const r = q as Record<string, unknown>;
    if (typeof r["question"] !== "string" || !Array.isArray(r["options"])) return null;
    const options: AskedQuestion["options"] = [];
    for (const o of r["options"] as unknown[]) {
      const label = typeof o === "object" && o !== null ? (o as Record<string, unknown>)["label"] : undefined;
      if (typeof label !== "string") return null;
      const description = (o as Record<string, unknown>)["description"];
      options.push(typeof description === "string" ? { label, description } : { label });
    }
    out.push({ question: r["question"], options, multiSelect: r["multiSelect"] === true });
  }
  return out;
}

export function questionFor(request: ToolRequest): QuestionPayload | null {
  const asked = askedQuestions(request.input);
  if (asked === null) return null;
  return {
    questions: asked.map((q, i) => ({
      question_id: `q${i}`,
      prompt: q.question,
      options: q.options.map((o) => ({ option_id: o.label, ...o })),
      multi_select: q.multiSelect,
      allow_free_text: true,
    })),
  };
}

/** AskUserQuestion takes its answers as `{<question text>: "<labels and text>"}` in the allowed input. */
export function questionAnswer(request: ToolRequest, resolution: QuestionResolution): PermissionResponse {
  const asked = askedQuestions(request.input) ?? [];
  const answers: Record<string, string> = {};
  for (const a of resolution.answers) {
    const q = asked[Number(a.question_id.slice(1))];
    if (q === undefined) continue;
    answers[q.question] = [...a.selected_option_ids, ...(a.text ? [a.text] : [])].join(", ");
  }
  return { behavior: "allow", updatedInput: { ...request.input, answers } };
}
