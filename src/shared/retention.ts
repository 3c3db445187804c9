/**
 * Retention GC (docs/task-model.md#retention): terminal tasks completed more than `retention_hours` ago are
 * removed as a whole unit — spool file, then the row with its events and requests. A task that a
 * guard still names is skipped, and so is one whose spool entry cannot be removed (next pass).
 * Never touches an active task. Runs on whichever thread calls it, with that thread's connection.
 * Offers `collectGarbage(scope)` (a pass) and `collectIfExpired(scope, task)` (one unit).
 */
import { guardedSlots, readGuard } from "./leases/guard-files.ts";
import { removeSpool } from "./spool.ts";
import { isTerminal, type Store, type TaskRow } from "./store/index.ts";
import { hoursBeforeIso, nowIso } from "./time.ts";

const BATCH = 500;

export interface GcScope {
  store: Store;
  stateDir: string;
  lockDir: string;
  retentionHours: number;
}

export interface GcResult {
  deleted: number;
  skipped: number;
}

const cutoffOf = (scope: GcScope): string => hoursBeforeIso(nowIso(), scope.retentionHours);

export function collectGarbage(scope: GcScope): GcResult {
  const cutoff = cutoffOf(scope);
  const guarded = new Set<string>();
  for (const slot of guardedSlots(scope.lockDir)) {
    const g = readGuard(scope.lockDir, slot);
    if (g.kind === "valid") guarded.add(g.guard.task_id);
  }
  const result: GcResult = { deleted: 0, skipped: 0 };
  const skippedIds = new Set<string>();
  for (;;) {
    const batch = scope.store.gcCandidates(cutoff, BATCH + skippedIds.size).filter((t) => !skippedIds.has(t.task_id));
    if (batch.length === 0) return result;
    const removable: string[] = [];
    for (const task of batch) {
      if (guarded.has(task.task_id) || !removeSpool(scope.stateDir, task.task_id)) {
        skippedIds.add(task.task_id);
        result.skipped++;
        continue;
      }
      removable.push(task.task_id);
    }
    // the rows of a batch go in one transaction; a crash before its commit leaves rows whose spool
    // files are already gone, which the next pass deletes like any other
    const deleted = new Set(scope.store.deleteTasks(removable));
    result.deleted += deleted.size;
    for (const id of removable) if (!deleted.has(id)) skippedIds.add(id);
  }
}

/**
 * One task unit, collected at once if it is expired, exactly as a pass would (not while a guard names
 * it, spool file first): an idempotency lookup that finds it frees its key without waiting for a pass.
 */
export function collectIfExpired(scope: GcScope, task: TaskRow): boolean {
  if (!isTerminal(task.status) || task.completed_at === null || task.completed_at >= cutoffOf(scope)) return false;
  const guard = readGuard(scope.lockDir, task.workdir_slot);
  if (guard.kind === "valid" && guard.guard.task_id === task.task_id) return false;
  if (!removeSpool(scope.stateDir, task.task_id)) return false;
  return scope.store.deleteTask(task.task_id);
}
