/**
 * Tasks whose end the store could not take (docs/reliability.md "The Bridge under faults"): a
 * terminal state, or the state change that starts the end, failed with BRIDGE_STORAGE_ERROR. Such a
 * task keeps its row and its guard as they are, so the slot stays fail-closed; once its run is over
 * it is an active task with no runner, which the periodic sweep finds when its provider is proven
 * gone and ends `interrupted` / BRIDGE_STORAGE_ERROR as soon as writes succeed again.
 */
import type { AuditLog } from "../../../shared/audit.ts";
import { isStorageFault } from "../../../shared/storage-fault.ts";
import { isTerminal, type Store } from "../../../shared/store/index.ts";

export class UnrecordedOutcomes {
  private readonly tasks = new Set<string>();

  constructor(private readonly audit: AuditLog) {}

  /** Runs a write of `taskId`'s state: a storage fault marks the task and yields null; any other failure is thrown. */
  attempt<T>(taskId: string, write: () => T): T | null {
    try {
      return write();
    } catch (e) {
      if (!isStorageFault(e)) throw e;
      if (!this.tasks.has(taskId)) this.audit.warn("task_state_unrecorded", { task_id: taskId, error_code: "BRIDGE_STORAGE_ERROR" });
      this.tasks.add(taskId);
      return null;
    }
  }

  has(taskId: string): boolean {
    return this.tasks.has(taskId);
  }

  /** Forgets the tasks whose end is now in the store (or that are gone from it). */
  prune(store: Store): void {
    for (const id of this.tasks) {
      const row = store.getTask(id);
      if (row === null || isTerminal(row.status)) this.tasks.delete(id);
    }
  }
}
