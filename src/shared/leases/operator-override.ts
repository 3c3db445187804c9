/**
 * The operator's view and override of active-slot guards (docs/bridge-rpc.md#methods `recovery.list` /
 * `recovery.clear`, docs/reliability.md#operator-override). The guard keeps exactly one writer — whoever holds the Bridge instance
 * lock — so these run either inside the Bridge (over its socket, on its main thread) or in the
 * `serverfs recovery` command while it holds the instance lock itself; the caller guarantees which.
 *
 * Offers: `listGuards(lockDir, store)`, `clearGuard(scope, slot)` and the type `OverrideScope`; what
 * they answer is typed by the `recovery.list` / `recovery.clear` result schemas (bridge-protocol/results.ts).
 */
import type { AuditLog } from "../audit.ts";
import type { ClearResult, GuardListing } from "../bridge-protocol/results.ts";
import { ServerFsError } from "../errors.ts";
import type { Store } from "../store/index.ts";
import { guardedSlots, readGuard, removeGuard } from "./guard-files.ts";
import { acquireLease, checkSlot } from "./lock-files.ts";
import { auditRecovery } from "./recovery-audit.ts";

const stringOrNull = (x: unknown): string | null => (typeof x === "string" ? x : null);

/** Every guard entry, valid or not, by slot. `store` is null when no database exists yet. */
export function listGuards(lockDir: string, store: Store | null): GuardListing[] {
  return guardedSlots(lockDir).map((slot): GuardListing => {
    const read = readGuard(lockDir, slot);
    if (read.kind !== "valid") {
      return { slot, task_id: null, runtime: null, workdir_alias: null, created_at: null, task_status: null, last_verdict: null };
    }
    const g = read.guard;
    const row = store?.getTask(g.task_id) ?? null;
    return {
      slot,
      task_id: g.task_id,
      runtime: g.runtime,
      // a guard is valid with only task_id and runtime right ("Read"); the rest is shown as found
      workdir_alias: stringOrNull(g.workdir_alias),
      created_at: stringOrNull(g.created_at),
      task_status: row?.status ?? null,
      last_verdict: row ? (store?.latestEvent(g.task_id, "task.reconciled")?.payload ?? null) : null,
    };
  });
}

export interface OverrideScope {
  lockDir: string;
  /** null when no database exists yet (an offline clear of a guard whose task cannot be looked up). */
  store: Store | null;
  audit: AuditLog;
}

/**
 * docs/reliability.md#operator-override steps 2–5: under the slot's lease (busy → WORKDIR_BUSY: a live write task holds it), remove
 * whatever guard is there, invalid ones included, and record it on the task without changing its
 * status. The caller has checked `--confirm`.
 */
export function clearGuard(scope: OverrideScope, slot: number): ClearResult {
  checkSlot(slot);
  const lease = acquireLease(scope.lockDir, slot);
  try {
    const read = readGuard(scope.lockDir, slot);
    if (read.kind === "absent") return { slot, cleared: false, task_id: null };
    const guard = read.kind === "valid" ? read.guard : null;
    if (!removeGuard(scope.lockDir, slot, null)) throw new ServerFsError("LOCK_PATH_UNSAFE", "the guard entry cannot be removed");
    if (guard && scope.store?.getTask(guard.task_id)) {
      scope.store.appendEvents(guard.task_id, [{ type: "task.reconciled", payload: { status: "OPERATOR_CLEARED", provider_active: null } }], {
        allowTerminal: true,
      });
    }
    auditRecovery(
      scope.audit,
      "recovery.operator_cleared",
      { slot, taskId: guard?.task_id ?? null, correlationId: guard?.correlation_id ?? null },
      { status: "OPERATOR_CLEARED", providerActive: null },
    );
    return { slot, cleared: true, task_id: guard?.task_id ?? null };
  } finally {
    lease.release();
  }
}
