/**
 * Restart reconciliation (bridge.md §12.2): before the socket opens, every task a crashed Bridge
 * left active is decided from evidence — the recorded process group, its leader's start time and
 * the provider mark — never re-run. Only a proven-gone provider (`provider_active = false`) clears a
 * guard; alive or unknown keeps it, so the slot stays fail-closed.
 */
import type { AuditLog } from "../../shared/audit.ts";
import { guardedSlots, readGuard, removeGuard } from "../../shared/leases/guard-files.ts";
import { checkProcessGroup, terminateProcessGroup } from "../../shared/process-group.ts";
import type { Store, TaskRow } from "../../shared/store/index.ts";
import { nowIso } from "../../shared/time.ts";

export type Classification = "REATTACHED" | "SESSION_RESUMABLE" | "NOT_RECOVERABLE" | "UNKNOWN";

export interface Verdict {
  status: Classification;
  providerActive: boolean | null;
}

export interface ReconcileScope {
  store: Store;
  lockDir: string;
  audit: AuditLog;
  terminateOrphans: boolean;
}

interface Evidence {
  pgid: number | null;
  startTime: number | null;
  mark: string | null;
  nativeSessionId: string | null;
  neverSpawned: boolean;
}

const evidenceOf = (t: TaskRow): Evidence => ({
  pgid: t.provider_pgid,
  startTime: t.provider_start_time,
  mark: t.provider_mark,
  nativeSessionId: t.native_session_id,
  neverSpawned: t.status === "queued",
});

const gone = (e: Evidence): Verdict => ({ status: e.nativeSessionId ? "SESSION_RESUMABLE" : "NOT_RECOVERABLE", providerActive: false });

/** Rows T1–T6: the verdict for one recorded provider, terminating an orphan when allowed. */
async function decide(e: Evidence, scope: ReconcileScope, audit: (fields: Record<string, unknown>) => void): Promise<Verdict> {
  if (e.neverSpawned) return gone(e);
  const check = checkProcessGroup(e.pgid, e.startTime, e.mark);
  if (check === "cannot_check") return { status: "UNKNOWN", providerActive: null };
  if (check === "gone") return gone(e);
  if (!scope.terminateOrphans) return { status: "UNKNOWN", providerActive: true };
  const { proven } = await terminateProcessGroup(e.pgid, e.startTime, e.mark);
  audit({ event: "recovery.orphan_terminated", status: proven ? "gone" : "alive", provider_active: !proven });
  return proven ? gone(e) : { status: "UNKNOWN", providerActive: true };
}

function auditLine(scope: ReconcileScope, slot: number | null, taskId: string | null, correlationId: string | null) {
  return (fields: Record<string, unknown>) =>
    scope.audit.info(String(fields["event"]), {
      schema_version: 1,
      slot,
      task_id: taskId,
      correlation_id: correlationId,
      status: fields["status"] as string,
      provider_active: fields["provider_active"] as boolean | null,
      at: nowIso(),
    });
}

function clearGuard(scope: ReconcileScope, slot: number, taskId: string, correlationId: string | null): void {
  if (removeGuard(scope.lockDir, slot, taskId)) {
    auditLine(scope, slot, taskId, correlationId)({ event: "recovery.guard_removed", status: "cleared", provider_active: false });
  }
}

/** §12.2 at startup: every active task, then every guard not handled that way (G1–G3). */
export async function reconcileAtStartup(scope: ReconcileScope): Promise<void> {
  const { store } = scope;
  const handled = new Set<string>();
  for (const task of store.listActive()) {
    handled.add(task.task_id);
    try {
      await reconcileActiveTask(scope, task);
    } catch (e) {
      scope.audit.error("reconcile_failed", { task_id: task.task_id, error_type: e instanceof Error ? e.name : typeof e });
    }
  }
  for (const slot of guardedSlots(scope.lockDir)) {
    try {
      await reconcileGuard(scope, slot, handled);
    } catch (e) {
      scope.audit.error("reconcile_failed", { slot, error_type: e instanceof Error ? e.name : typeof e });
    }
  }
}

async function reconcileActiveTask(scope: ReconcileScope, task: TaskRow): Promise<void> {
  const { store } = scope;
  store.appendEvents(task.task_id, [{ type: "runtime.reconcile_started", payload: { runtime: task.runtime } }], { allowTerminal: true });
  const verdict = await decide(evidenceOf(task), scope, auditLine(scope, task.workdir_slot, task.task_id, task.correlation_id));
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
  if (verdict.providerActive === false && task.profile === "workspace-write") {
    clearGuard(scope, task.workdir_slot, task.task_id, task.correlation_id);
  }
}

/** G1 (terminal task), G2 (row missing), G3 (invalid guard). */
async function reconcileGuard(scope: ReconcileScope, slot: number, handled: Set<string>): Promise<void> {
  const read = readGuard(scope.lockDir, slot);
  if (read.kind !== "valid") {
    if (read.kind === "invalid") auditLine(scope, slot, null, null)({ event: "recovery.guard_invalid", status: "UNKNOWN", provider_active: null });
    return;
  }
  const g = read.guard;
  if (handled.has(g.task_id)) return;
  const row = scope.store.getTask(g.task_id);
  const evidence: Evidence = row
    ? { ...evidenceOf(row), neverSpawned: false }
    : { pgid: g.provider_pgid, startTime: g.provider_start_time, mark: g.provider_mark, nativeSessionId: g.native_session_id, neverSpawned: false };
  const audit = auditLine(scope, slot, g.task_id, g.correlation_id);
  const verdict = await decide(evidence, scope, audit);
  if (row) {
    scope.store.appendEvents(
      g.task_id,
      [{ type: "task.reconciled", payload: { status: verdict.status, provider_active: verdict.providerActive } }],
      { allowTerminal: true },
    );
  } else {
    audit({ event: "recovery.guard_without_task", status: verdict.status, provider_active: verdict.providerActive });
  }
  if (verdict.providerActive === false) clearGuard(scope, slot, g.task_id, g.correlation_id);
}
