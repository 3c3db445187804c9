/**
 * Approvals the Bridge declines on its own instead of asking a human (docs/agent-requests.md): a
 * permission request naming a path outside the workdir. Redaction turns such a path into
 * `"<outside-workdir>"`, so a human shown the request could not see what they would grant; no human
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

/** A permission request (or a tool blocked on a path) that reaches outside the workdir. */
export function outsideWorkdir(payload: Record<string, unknown>): boolean {
  return namesOutside(payload["requested_permissions"]) || payload["blocked_path"] === OUTSIDE_MARK;
}

/** The `approval.auto_declined` payload: what was asked, never its details. */
export function autoDeclinedEvent(payload: Record<string, unknown>, reason: AutoDeclineReason): Record<string, unknown> {
  return { category: payload["category"], title: payload["title"], reason };
}
