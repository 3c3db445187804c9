/**
 * The metadata-only audit line of docs/task-model.md#reconciliation, written for each orphan termination, each guard a
 * reconciliation removes or keeps, and each operator clear: `{schema_version, event, slot, task_id,
 * correlation_id, status, provider_active, at}` and nothing else — no paths, prompts, process ids or
 * native ids.
 */
import type { AuditLog } from "../audit.ts";
import { nowIso } from "../time.ts";

export type RecoveryEvent = "recovery.orphan_terminated" | "recovery.guard_removed" | "recovery.guard_kept" | "recovery.operator_cleared";

export interface RecoverySubject {
  slot: number | null;
  taskId: string | null;
  correlationId: string | null;
}

export function auditRecovery(
  audit: AuditLog,
  event: RecoveryEvent,
  subject: RecoverySubject,
  outcome: { status: string; providerActive: boolean | null },
): void {
  const fields = {
    schema_version: 1,
    slot: subject.slot,
    task_id: subject.taskId,
    correlation_id: subject.correlationId,
    status: outcome.status,
    provider_active: outcome.providerActive,
    at: nowIso(),
  };
  if (event === "recovery.guard_kept") audit.warn(event, fields);
  else audit.info(event, fields);
}
