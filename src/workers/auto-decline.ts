/**
 * Approvals the Bridge declines on its own instead of asking a human (docs/agent-requests.md): a
 * request naming a path outside the workdir (a permission asked for, the path a tool is blocked on, a
 * file a change touches, a path in a tool's input). Redaction turns such a path into
 * `"<outside-workdir>"`, so a human shown the request could not see what they would allow; no human
 * is asked, the provider gets a decline and the task's events say why (`approval.auto_declined`).
 *
 * Offers `outsideWorkdir(payload)` (on the redacted payload) and `autoDeclinedEvent(payload, reason)`.
 * A review task's approvals are declined the same way by the runtime adapter that runs reviews
 * (codex), which knows that its review run relies on them never being allowed.
 */
import { OUTSIDE_MARK } from "../shared/redact.ts";

export type AutoDeclineReason = "outside_workdir" | "review_task";

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
