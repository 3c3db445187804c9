/**
 * What a human-in-the-loop request says at a glance (docs/agent-requests.md): the one-line `summary`
 * of an approval or question payload, and the short form `approval.requested` / `question.requested`
 * events carry, so that a client following events sees what is asked without another call.
 *
 * Offers `str` and `list` (a payload's text and list fields, for request-details.ts too),
 * `requestSummary(kind, payload)` (the `summary` line, from the redacted payload) and
 * `requestEventFields(kind, payload)` (`summary`, `category`, `title`, `command`, `paths` with their
 * change kinds and a rename's `new_path`; never a diff, a tool input or an answer). A command's summary
 * says where it runs, a rename's names its new path.
 */
import { OUTSIDE_MARK } from "./redact.ts";
import { cutUtf8 } from "./utf8.ts";

/** A summary is one line; longer text stays in the payload's own fields. */
const SUMMARY_BYTES = 240;
/** Paths named in an event: enough to judge, never so many that the event nears its limit. */
const EVENT_PATHS = 50;
const EVENT_COMMAND_BYTES = 1024;

type Json = Record<string, unknown>;

const oneLine = (text: string, max = SUMMARY_BYTES): string => {
  const flat = text.replace(/\s+/g, " ").trim();
  const cut = cutUtf8(flat, max);
  return cut.truncated ? `${cut.text}…` : cut.text;
};

/** A payload's text field, when it has one that says something. */
export const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
/** A payload's list field, when it is one. */
export const list = (v: unknown): Json[] => (Array.isArray(v) ? (v as Json[]) : []);

/** A changed file in short: its path and kind, and a rename's new path. */
function changes(payload: Json): { path: string; kind: string; new_path?: string }[] {
  return list(payload["file_changes"]).map((c) => {
    const newPath = str(c["new_path"]);
    return { path: String(c["path"]), kind: str(c["kind"]) ?? "update", ...(newPath === undefined ? {} : { new_path: newPath }) };
  });
}

/**
 * Where a command runs, said after the title: nothing at the workdir's root (or when the runtime does
 * not say), `in <dir>` below it, `outside the workdir`, and `in an unknown directory` when the runtime
 * could not say for certain (`relative_cwd: null`).
 */
function place(payload: Json): string {
  const cwd = payload["relative_cwd"];
  if (cwd === null) return " in an unknown directory";
  if (typeof cwd !== "string" || cwd === "" || cwd === ".") return "";
  return cwd === OUTSIDE_MARK ? " outside the workdir" : ` in ${cwd}`;
}

export function requestSummary(kind: "approval" | "question", payload: Json): string {
  if (kind === "question") {
    const questions = list(payload["questions"]);
    const first = str(questions[0]?.["prompt"]) ?? "a question";
    return oneLine(questions.length > 1 ? `${first} (+${questions.length - 1} more)` : first);
  }
  const title = str(payload["title"]) ?? "Approve";
  const command = str(payload["command"]) ?? str(payload["command_display"]);
  if (payload["category"] === "command" && command) return oneLine(`${title}${place(payload)}: ${command}`);
  const files = changes(payload);
  if (files.length > 0) return oneLine(`${title}: ${files.map((f) => `${f.kind} ${f.path}${f.new_path === undefined ? "" : ` → ${f.new_path}`}`).join(", ")}`);
  const permissions = list(payload["requested_permissions"]);
  if (permissions.length > 0) return oneLine(`${title}: ${permissions.map((p) => String(p["kind"])).join(", ")}`);
  // a Codex MCP tool is named with its server, as Claude's mcp__server__tool names carry it
  const tool = [str(payload["server"]), str(payload["tool"])].filter((x) => x !== undefined).join("/");
  return oneLine(tool ? `${title}: ${tool}` : title);
}

export function requestEventFields(kind: "approval" | "question", payload: Json): Json {
  const summary = str(payload["summary"]) ?? requestSummary(kind, payload);
  if (kind === "question") {
    return { summary, category: "question", question_count: list(payload["questions"]).length };
  }
  const out: Json = { summary, category: payload["category"], title: payload["title"] };
  const command = str(payload["command"]) ?? str(payload["command_display"]);
  if (command) {
    const cut = cutUtf8(command, EVENT_COMMAND_BYTES);
    out["command"] = cut.text;
    if (cut.truncated) out["truncated"] = true;
  }
  const files = changes(payload);
  if (files.length > 0) {
    out["paths"] = files.slice(0, EVENT_PATHS);
    if (files.length > EVENT_PATHS) out["truncated"] = true;
  }
  return out;
}
