/**
 * Reconciliation verdict shared by every runtime of this release (docs/task-model.md#reconciliation): none can reattach,
 * so only the process-group check and the stored native session decide.
 *
 * Offers: `reconcileFromEvidence(record)` → `{status, providerActive}`: proven gone → SESSION_RESUMABLE
 * (a stored session) or NOT_RECOVERABLE, provider_active false; alive → UNKNOWN, true; cannot check →
 * UNKNOWN, null. It sends no signals; terminating an orphan is the caller's decision.
 */
import { checkProcessGroup } from "../../shared/process-group.ts";
import type { ReconcileRecord, ReconcileVerdict } from "./types.ts";

export function reconcileFromEvidence(record: ReconcileRecord): ReconcileVerdict {
  const verdict = checkProcessGroup(record.pgid, record.startTime, record.mark);
  if (verdict === "gone") {
    return { status: record.nativeSessionId !== null ? "SESSION_RESUMABLE" : "NOT_RECOVERABLE", providerActive: false };
  }
  return { status: "UNKNOWN", providerActive: verdict === "alive" ? true : null };
}
