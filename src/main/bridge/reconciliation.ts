/**
 * Reconciliation (docs/task-model.md#reconciliation) on the Bridge's main thread, the only thread that writes guards.
 * Every task a crashed Bridge left active, and every guard nobody is running, is decided from
 * evidence (`reconcile-verdict.ts`) — never re-run. Only a proven-gone provider
 * (`provider_active = false`) clears a guard; alive or unknown keeps it, so the slot stays
 * fail-closed.
 *
 * Offers:
 * - `reconcileAtStartup(scope)`: docs/reliability.md#startup-before-the-socket-opens, before the socket opens — rows T1–T6 for every active task
 *   (with the `runtime.reconcile_*` pair, orphans terminated when `terminateOrphans`, all at once),
 *   then every ended task something of whose run still lives, then G1–G3 for every other guard.
 * - `reconcileSlotLazily(scope, slot)`: docs/reliability.md#lazy-write-submit-and-periodic-maintenance at write submit; true when the slot has no guard left.
 * - `settleFinding(scope, finding)`: docs/reliability.md#lazy-write-submit-and-periodic-maintenance periodic; acts on one gone verdict of the maintenance sweep.
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
import { liveMarks, terminateProcessGroup } from "../../shared/process-group.ts";
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
  /** The task has a live runner in this Bridge (its runner owns it, docs/reliability.md#lazy-write-submit-and-periodic-maintenance). */
  isLive(taskId: string): boolean;
}

const subjectOf = (slot: number | null, t: { task_id: string; correlation_id: string | null }): RecoverySubject => ({
  slot,
  taskId: t.task_id,
  correlationId: t.correlation_id,
});

const guardSubject = (g: Guard): RecoverySubject => ({ slot: g.slot, taskId: g.task_id, correlationId: g.correlation_id });

/** A startup decision: the verdict, and whether an orphan termination was tried (its audit line). */
interface StartupDecision {
  verdict: Verdict;
  terminated: boolean;
}

/** Rows T2–T5 at startup: an orphan that outlived the crashed Bridge is terminated when allowed. */
async function decideAtStartup(e: Evidence, scope: StartupScope): Promise<StartupDecision> {
  const checked = checkVerdict(e);
  if (checked.providerActive !== true || !scope.terminateOrphans) return { verdict: checked, terminated: false };
  const { proven } = await terminateProcessGroup(e.pgid, e.startTime, e.mark);
  return { verdict: proven ? goneVerdict(e) : { status: "UNKNOWN", providerActive: true }, terminated: true };
}

/** The decision's own audit line, written with the task's other records, in order. */
function auditDecision(scope: StartupScope, subject: RecoverySubject, decision: StartupDecision): Verdict {
  if (decision.terminated) auditRecovery(scope.audit, "recovery.orphan_terminated", subject, decision.verdict);
  return decision.verdict;
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

type Where = { task_id: string } | { slot: number };

const reconcileFailed = (scope: StartupScope, where: Where, e: unknown): void => scope.audit.error("reconcile_failed", { ...where, ...failureFields(e) });

/** Runs one step of startup reconciliation; a failure is logged and never stops startup. */
function logged(scope: StartupScope, where: Where, step: () => void): boolean {
  try {
    step();
    return true;
  } catch (e) {
    reconcileFailed(scope, where, e);
    return false;
  }
}

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };
const settled = <T>(p: Promise<T>): Promise<Settled<T>> =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );

/** A guard entry as startup finds it: invalid (G3), naming an active task (handled with it), or alone (G1, G2). */
type GuardAtStartup = { kind: "invalid"; slot: number } | { kind: "handled" } | { kind: "alone"; slot: number; guard: Guard; row: TaskRow | null };

function guardAtStartup(scope: StartupScope, slot: number, handled: ReadonlySet<string>): GuardAtStartup {
  const read = readGuard(scope.lockDir, slot);
  if (read.kind === "absent") return { kind: "handled" };
  if (read.kind === "invalid") return { kind: "invalid", slot };
  if (handled.has(read.guard.task_id)) return { kind: "handled" };
  return { kind: "alone", slot, guard: read.guard, row: scope.store.getTask(read.guard.task_id) };
}

/**
 * docs/reliability.md#startup-before-the-socket-opens at startup: every active task (by created_at), then every ended task that no guard names
 * but whose mark a live process still carries (a crash cut its finally path short: review tasks have no
 * guard to point at what their run left), then every guard not handled that way. The decisions — each a
 * group check, and for a live orphan a termination of up to one bound (SIGTERM, 5 s, SIGKILL, 5 s) — all
 * run at once, so the socket opens within about one bound however many orphans there are. The records
 * are still written in order: every task's `runtime.reconcile_started` before any decision, then task
 * after task in created_at order its audit lines, events, status change and guard, then the ended tasks
 * in created_at order, then guard after guard by slot.
 */
export async function reconcileAtStartup(scope: StartupScope): Promise<void> {
  const tasks = scope.store.listActive();
  const begun = tasks.map((task) =>
    logged(scope, { task_id: task.task_id }, () => {
      scope.store.appendEvents(task.task_id, [{ type: "runtime.reconcile_started", payload: { runtime: task.runtime } }]);
    }),
  );
  const handled = new Set(tasks.map((t) => t.task_id));
  const guards = guardedSlots(scope.lockDir).map((slot) => guardAtStartup(scope, slot, handled));
  const guardNamed = new Set(guards.flatMap((g) => (g.kind === "alone" ? [g.guard.task_id] : [])));
  const ended = scope.store.listTerminalByMark(liveMarks()).filter((t) => !guardNamed.has(t.task_id));

  const taskDecisions = tasks.map((task, i) => (begun[i] ? settled(decideAtStartup(evidenceOfTask(task), scope)) : null));
  const endedDecisions = ended.map((task) => settled(decideAtStartup(evidenceOfTask(task), scope)));
  const guardDecisions = guards.map((g) =>
    g.kind === "alone" ? settled(decideAtStartup(g.row ? evidenceOfTask(g.row) : evidenceOfGuard(g.guard), scope)) : null,
  );

  for (const [i, task] of tasks.entries()) {
    const decided = await taskDecisions[i];
    if (!decided) continue;
    const where = { task_id: task.task_id };
    if (!decided.ok) reconcileFailed(scope, where, decided.error);
    else logged(scope, where, () => recordActiveTask(scope, task, decided.value));
  }
  for (const [i, task] of ended.entries()) {
    const decided = await endedDecisions[i]!;
    const where = { task_id: task.task_id };
    if (!decided.ok) reconcileFailed(scope, where, decided.error);
    else logged(scope, where, () => recordEndedTask(scope, task, decided.value));
  }
  for (const [i, g] of guards.entries()) {
    if (g.kind === "invalid") {
      auditRecovery(scope.audit, "recovery.guard_kept", { slot: g.slot, taskId: null, correlationId: null }, { status: "UNKNOWN", providerActive: null });
    }
    const decided = await guardDecisions[i];
    if (!decided || g.kind !== "alone") continue;
    const where = { slot: g.slot };
    if (!decided.ok) reconcileFailed(scope, where, decided.error);
    else logged(scope, where, () => recordGuardAlone(scope, g.guard, g.row, decided.value));
  }
}

/** Rows T1–T6 for one active task: the decision's records, the interrupt, the guard column. */
function recordActiveTask(scope: StartupScope, task: TaskRow, decision: StartupDecision): void {
  const { store } = scope;
  const subject = subjectOf(task.profile === "workspace-write" ? task.workdir_slot : null, task);
  const verdict = auditDecision(scope, subject, decision);
  const code = task.deadline_at !== null && task.deadline_at <= nowIso() ? "AGENT_TASK_TIMED_OUT" : "BRIDGE_RESTARTED";
  store.appendEvents(
    task.task_id,
    [{ type: "runtime.reconcile_finished", payload: { runtime: task.runtime, status: verdict.status, provider_active: verdict.providerActive } }],
    { allowTerminal: true },
  );
  const message = code === "AGENT_TASK_TIMED_OUT" ? "the task deadline passed" : "the Bridge restarted; the task was not re-run";
  store.endTask(
    task.task_id,
    { to: "interrupted", error: { code, message } },
    { before: [{ type: "task.reconciled", payload: { status: verdict.status, provider_active: verdict.providerActive, error_code: code } }] },
  );
  applyGuard(scope, subject, verdict);
}

/**
 * An ended task whose run left something alive: like G1 without a guard — the decision's audit line and
 * `task.reconciled {status, provider_active}`, the status unchanged. A group that died before the check
 * leaves no record: there was nothing to tell.
 */
function recordEndedTask(scope: StartupScope, task: TaskRow, decision: StartupDecision): void {
  if (!decision.terminated && decision.verdict.providerActive === false) return;
  const verdict = auditDecision(scope, subjectOf(task.profile === "workspace-write" ? task.workdir_slot : null, task), decision);
  scope.store.appendEvents(task.task_id, [{ type: "task.reconciled", payload: { status: verdict.status, provider_active: verdict.providerActive } }], {
    allowTerminal: true,
  });
}

/** G1 (terminal task: T2–T6 on its group, task unchanged) and G2 (row missing: the guard's fields). */
function recordGuardAlone(scope: StartupScope, g: Guard, row: TaskRow | null, decision: StartupDecision): void {
  const subject = guardSubject(g);
  const verdict = auditDecision(scope, subject, decision);
  if (row) {
    scope.store.appendEvents(g.task_id, [{ type: "task.reconciled", payload: { status: verdict.status, provider_active: verdict.providerActive } }], {
      allowTerminal: true,
    });
  }
  applyGuard(scope, subject, verdict);
}

/**
 * The docs/reliability.md#lazy-write-submit-and-periodic-maintenance table for a gone verdict: an active task is interrupted with AGENT_PROVIDER_INACTIVE (or
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
    const moved = scope.store.endTask(
      taskId,
      { to: "interrupted", error: end },
      { before: [{ type: "task.reconciled", payload: { status: verdict.status, provider_active: false, error_code: end.code } }] },
    );
    interrupted = moved !== null;
  }
  if (!applyGuard(scope, subject, verdict) || !row || interrupted) return;
  scope.store.appendEvents(taskId, [{ type: "task.reconciled", payload: { status: verdict.status, provider_active: false } }], { allowTerminal: true });
}

/** docs/reliability.md#lazy-write-submit-and-periodic-maintenance lazy, for a write submit on `slot`: true when no guard is left (cleared on proof, or none). */
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
 * docs/reliability.md#lazy-write-submit-and-periodic-maintenance periodic: the maintenance worker decided `finding` from a snapshot; this re-checks on the
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
