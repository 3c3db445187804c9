/**
 * Reconciliation (bridge.md §12) on the Bridge's main thread, the only thread that writes guards.
 * Every task a crashed Bridge left active, and every guard nobody is running, is decided from
 * evidence (`reconcile-verdict.ts`) — never re-run. Only a proven-gone provider
 * (`provider_active = false`) clears a guard; alive or unknown keeps it, so the slot stays
 * fail-closed.
 *
 * Offers:
 * - `reconcileAtStartup(scope)`: §12.2, before the socket opens — rows T1–T6 for every active task
 *   (with the `runtime.reconcile_*` pair, orphans terminated when `terminateOrphans`), then G1–G3 for
 *   every other guard.
 * - `reconcileSlotLazily(scope, slot)`: §12.3 at write submit; true when the slot has no guard left.
 * - `settleFinding(scope, finding)`: §12.3 periodic; acts on one gone verdict of the maintenance sweep.
 * Lazy and periodic send no signals and append only `task.reconciled` (+ `task.interrupted`).
 */
import type { AuditLog } from "../../shared/audit.ts";
import { type Guard, guardedSlots, readGuard, removeGuard } from "../../shared/leases/guard-files.ts";
import {
  checkVerdict,
  type Evidence,
  evidenceOfGuard,
  evidenceOfTask,
  goneVerdict,
  type SweepFinding,
  type Verdict,
} from "../../shared/leases/reconcile-verdict.ts";
import { auditRecovery, type RecoverySubject } from "../../shared/leases/recovery-audit.ts";
import { terminateProcessGroup } from "../../shared/process-group.ts";
import { isTerminal, type Store, type TaskRow } from "../../shared/store/index.ts";
import { nowIso } from "../../shared/time.ts";

export interface RecoveryScope {
  store: Store;
  lockDir: string;
  audit: AuditLog;
  /** The task's run ended while the store could not record it: its end is BRIDGE_STORAGE_ERROR, not AGENT_PROVIDER_INACTIVE. */
  unrecorded?: (taskId: string) => boolean;
}

const INACTIVE = { code: "AGENT_PROVIDER_INACTIVE", message: "the task's provider is no longer running" } as const;
const UNRECORDED = { code: "BRIDGE_STORAGE_ERROR", message: "the task ended while the Bridge could not write its state" } as const;

export interface StartupScope extends RecoveryScope {
  terminateOrphans: boolean;
}

export interface QuietScope extends RecoveryScope {
  /** The task has a live runner in this Bridge (its runner owns it, §12.3). */
  isLive(taskId: string): boolean;
}

const subjectOf = (slot: number | null, t: { task_id: string; correlation_id: string | null }): RecoverySubject => ({
  slot,
  taskId: t.task_id,
  correlationId: t.correlation_id,
});

const guardSubject = (g: Guard): RecoverySubject => ({ slot: g.slot, taskId: g.task_id, correlationId: g.correlation_id });

/** Rows T2–T5 at startup: an orphan that outlived the crashed Bridge is terminated when allowed. */
async function decideAtStartup(e: Evidence, scope: StartupScope, subject: RecoverySubject): Promise<Verdict> {
  const checked = checkVerdict(e);
  if (checked.providerActive !== true || !scope.terminateOrphans) return checked;
  const { proven } = await terminateProcessGroup(e.pgid, e.startTime, e.mark);
  const verdict: Verdict = proven ? goneVerdict(e) : { status: "UNKNOWN", providerActive: true };
  auditRecovery(scope.audit, "recovery.orphan_terminated", subject, verdict);
  return verdict;
}

/** The guard column: removed only for a proven-gone provider, and only the guard naming this task. */
function applyGuard(scope: RecoveryScope, subject: RecoverySubject, verdict: Verdict): boolean {
  if (subject.slot === null || subject.taskId === null) return false;
  const read = readGuard(scope.lockDir, subject.slot);
  if (read.kind !== "valid" || read.guard.task_id !== subject.taskId) return false;
  if (verdict.providerActive !== false) {
    auditRecovery(scope.audit, "recovery.guard_kept", subject, verdict);
    return false;
  }
  if (!removeGuard(scope.lockDir, subject.slot, subject.taskId)) return false;
  auditRecovery(scope.audit, "recovery.guard_removed", subject, verdict);
  return true;
}

const failureFields = (e: unknown) => ({ error_type: e instanceof Error ? e.name : typeof e });

/** §12.2 at startup: every active task (by created_at), then every guard not handled that way. */
export async function reconcileAtStartup(scope: StartupScope): Promise<void> {
  const handled = new Set<string>();
  for (const task of scope.store.listActive()) {
    handled.add(task.task_id);
    try {
      await reconcileActiveTask(scope, task);
    } catch (e) {
      scope.audit.error("reconcile_failed", { task_id: task.task_id, ...failureFields(e) });
    }
  }
  for (const slot of guardedSlots(scope.lockDir)) {
    try {
      await reconcileGuardAlone(scope, slot, handled);
    } catch (e) {
      scope.audit.error("reconcile_failed", { slot, ...failureFields(e) });
    }
  }
}

async function reconcileActiveTask(scope: StartupScope, task: TaskRow): Promise<void> {
  const { store } = scope;
  const slot = task.profile === "workspace-write" ? task.workdir_slot : null;
  const subject = subjectOf(slot, task);
  store.appendEvents(task.task_id, [{ type: "runtime.reconcile_started", payload: { runtime: task.runtime } }]);
  const verdict = await decideAtStartup(evidenceOfTask(task), scope, subject);
  const code = task.deadline_at !== null && task.deadline_at <= nowIso() ? "AGENT_TASK_TIMED_OUT" : "BRIDGE_RESTARTED";
  store.appendEvents(
    task.task_id,
    [{ type: "runtime.reconcile_finished", payload: { runtime: task.runtime, status: verdict.status, provider_active: verdict.providerActive } }],
    { allowTerminal: true },
  );
  store.transition(task.task_id, "interrupted", {
    error: { code, message: code === "AGENT_TASK_TIMED_OUT" ? "the task deadline passed" : "the Bridge restarted; the task was not re-run" },
    events: [
      { type: "task.reconciled", payload: { status: verdict.status, provider_active: verdict.providerActive, error_code: code } },
      { type: "task.interrupted", payload: { error_code: code } },
    ],
  });
  applyGuard(scope, subject, verdict);
}

/** G1 (terminal task: T2–T6 on its group, task unchanged), G2 (row missing: the guard's fields), G3 (invalid: kept). */
async function reconcileGuardAlone(scope: StartupScope, slot: number, handled: Set<string>): Promise<void> {
  const read = readGuard(scope.lockDir, slot);
  if (read.kind === "absent") return;
  if (read.kind === "invalid") {
    auditRecovery(scope.audit, "recovery.guard_kept", { slot, taskId: null, correlationId: null }, { status: "UNKNOWN", providerActive: null });
    return;
  }
  const g = read.guard;
  if (handled.has(g.task_id)) return;
  const row = scope.store.getTask(g.task_id);
  const subject = guardSubject(g);
  const verdict = await decideAtStartup(row ? evidenceOfTask(row) : evidenceOfGuard(g), scope, subject);
  if (row) {
    scope.store.appendEvents(g.task_id, [{ type: "task.reconciled", payload: { status: verdict.status, provider_active: verdict.providerActive } }], {
      allowTerminal: true,
    });
  }
  applyGuard(scope, subject, verdict);
}

/**
 * The §12.3 table for a gone verdict: an active task is interrupted with AGENT_PROVIDER_INACTIVE (or
 * BRIDGE_STORAGE_ERROR for a run whose end the store could not take then); a guard naming the task is
 * removed, and a terminal task is told so only when that removal happened. A missing row leaves only
 * the audit line.
 */
function settleGone(scope: RecoveryScope, slot: number | null, taskId: string, fallback: RecoverySubject, verdict: Verdict): void {
  const row = scope.store.getTask(taskId);
  const subject = row ? subjectOf(slot, row) : fallback;
  let interrupted = false;
  if (row && !isTerminal(row.status)) {
    const end = scope.unrecorded?.(taskId) ? UNRECORDED : INACTIVE;
    const moved = scope.store.transition(taskId, "interrupted", {
      error: end,
      events: [
        { type: "task.reconciled", payload: { status: verdict.status, provider_active: false, error_code: end.code } },
        { type: "task.interrupted", payload: { error_code: end.code } },
      ],
    });
    interrupted = moved !== null;
  }
  if (!applyGuard(scope, subject, verdict) || !row || interrupted) return;
  scope.store.appendEvents(taskId, [{ type: "task.reconciled", payload: { status: verdict.status, provider_active: false } }], { allowTerminal: true });
}

/** §12.3 lazy, for a write submit on `slot`: true when no guard is left (cleared on proof, or none). */
export function reconcileSlotLazily(scope: RecoveryScope, slot: number): boolean {
  const read = readGuard(scope.lockDir, slot);
  if (read.kind === "absent") return true;
  if (read.kind === "invalid") return false;
  const g = read.guard;
  const row = scope.store.getTask(g.task_id);
  const verdict = checkVerdict(row ? evidenceOfTask(row) : evidenceOfGuard(g));
  if (verdict.providerActive !== false) return false;
  settleGone(scope, slot, g.task_id, guardSubject(g), verdict);
  return readGuard(scope.lockDir, slot).kind === "absent";
}

/**
 * §12.3 periodic: the maintenance worker decided `finding` from a snapshot; this re-checks on the
 * main thread that it still holds — no live runner took the task, and a guard finding's guard still
 * names it — before acting. A proven-gone provider never comes back, so the verdict itself stays true.
 */
export function settleFinding(scope: QuietScope, finding: SweepFinding): void {
  if (finding.verdict.providerActive !== false || scope.isLive(finding.taskId)) return;
  if (finding.slot === null) {
    const row = scope.store.getTask(finding.taskId);
    if (!row || isTerminal(row.status)) return;
    settleGone(scope, null, finding.taskId, subjectOf(null, row), finding.verdict);
    return;
  }
  const read = readGuard(scope.lockDir, finding.slot);
  if (read.kind !== "valid" || read.guard.task_id !== finding.taskId) return;
  settleGone(scope, finding.slot, finding.taskId, guardSubject(read.guard), finding.verdict);
}
