/**
 * Approvals the Bridge declines on its own instead of asking a human (docs/agent-requests.md): a
 * request naming a path outside the workdir (a permission asked for, the path a tool is blocked on, a
 * file a change touches, a path in a tool's input). Outside is where a path lands, not how it is
 * spelled: `landPaths` first puts every path a request names where it resolves (src/shared/fs/landing.ts,
 * links followed), or the outside mark; redaction turns any other outside path into the same
 * `"<outside-workdir>"`, so a human shown the request could not see what they would allow; no human
 * is asked, the provider gets a decline and the task's events say why (`approval.auto_declined`).
 *
 * Offers `landPaths(payload, land)` (on the provider's payload), `outsideWorkdir(payload)` (on the
 * redacted payload) and `autoDeclinedEvent(payload, reason)`.
 * A review task's approvals are declined the same way by the runtime adapter that runs reviews
 * (codex), which knows that its review run relies on them never being allowed.
 */
import { OUTSIDE_MARK } from "../shared/redact.ts";
import type { ApprovalPayload } from "./providers/types.ts";

export type AutoDeclineReason = "outside_workdir" | "review_task";

/** Where one path lands: the absolute path it resolves to inside the workdir, else `OUTSIDE_MARK`. */
export type Land = (path: string) => string;

/**
 * The keys of a runtime's own tool's input that name a path (Claude's Read, Write, Edit, NotebookEdit,
 * Grep, Glob). An MCP tool's (Codex's `mcp_tool` approvals, Claude's `mcp__…` tools) keys mean what its server says (ServerFS's own `path` is relative
 * to a workdir's root, not to the start directory), so its input is only redacted.
 */
const TOOL_PATH_KEYS = ["file_path", "notebook_path", "path"];
const isMcpTool = (payload: ApprovalPayload): boolean => payload.category === "mcp_tool" || payload.tool?.startsWith("mcp__") === true;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * A file-system permission's details with each path landed: `read` / `write` lists and Codex's
 * `entries`, whose `{type: "path", path}` is a path; any other kind of entry (a special location such
 * as the whole filesystem) names no workdir path a human could judge, so it counts as outside.
 */
function landDetails(details: Record<string, unknown>, land: Land): Record<string, unknown> {
  const out: Record<string, unknown> = { ...details };
  for (const key of ["read", "write"]) {
    const list = details[key];
    if (Array.isArray(list)) out[key] = list.map((p) => (typeof p === "string" ? land(p) : OUTSIDE_MARK));
  }
  if (Array.isArray(details["entries"])) {
    out["entries"] = details["entries"].map((entry) => {
      const at = isRecord(entry) ? entry["path"] : undefined;
      if (isRecord(at) && at["type"] === "path" && typeof at["path"] === "string") return { ...entry, path: { ...at, path: land(at["path"]) } };
      return { ...(isRecord(entry) ? entry : {}), path: OUTSIDE_MARK };
    });
  }
  return out;
}

/**
 * The payload with every path it names put where it lands: the blocked path, each changed file and
 * rename target, each path of a file-system permission, the path keys of a runtime tool's input, and the
 * directory a command runs in (which is only said to be outside, never declined for it). A command's
 * own text is left as the model wrote it.
 */
export function landPaths(payload: ApprovalPayload, land: Land): ApprovalPayload {
  const out: ApprovalPayload = { ...payload };
  if (payload.blocked_path !== undefined) out.blocked_path = land(payload.blocked_path);
  if (typeof payload.relative_cwd === "string") out.relative_cwd = land(payload.relative_cwd);
  if (payload.file_changes) {
    out.file_changes = payload.file_changes.map((c) => ({
      ...c,
      path: land(c.path),
      ...(c.new_path === undefined ? {} : { new_path: land(c.new_path) }),
    }));
  }
  if (payload.requested_permissions) {
    out.requested_permissions = payload.requested_permissions.map((p) => (p.kind === "file_system" ? { ...p, details: landDetails(p.details, land) } : p));
  }
  if (payload.tool_input && !isMcpTool(payload)) {
    const input = { ...payload.tool_input };
    for (const key of TOOL_PATH_KEYS) if (typeof input[key] === "string") input[key] = land(input[key]);
    out.tool_input = input;
  }
  return out;
}

/** Whether any string below `value` is the redaction mark of a path outside the workdir. */
function namesOutside(value: unknown): boolean {
  if (typeof value === "string") return value === OUTSIDE_MARK;
  if (Array.isArray(value)) return value.some(namesOutside);
  if (typeof value === "object" && value !== null) return Object.values(value).some(namesOutside);
  return false;
}

/** The paths a file change names (not its content, which may hold any text). */
const changedPaths = (changes: unknown): unknown[] =>
  Array.isArray(changes) ? changes.flatMap((c) => (typeof c === "object" && c !== null ? [c["path"], c["new_path"]] : [])) : [];

/** A redacted approval payload that names a path outside the workdir. */
export function outsideWorkdir(payload: Record<string, unknown>): boolean {
  return (
    namesOutside(payload["requested_permissions"]) ||
    payload["blocked_path"] === OUTSIDE_MARK ||
    namesOutside(changedPaths(payload["file_changes"])) ||
    namesOutside(payload["tool_input"])
  );
}

/** The `approval.auto_declined` payload: what was asked, never its details. */
export function autoDeclinedEvent(payload: Record<string, unknown>, reason: AutoDeclineReason): Record<string, unknown> {
  return { category: payload["category"], title: payload["title"], reason };
}
