/**
 * The one way the store writes (docs/task-model.md#the-state-database as docs/reliability.md reads it): `fn` in one
 * `BEGIN IMMEDIATE` transaction (a savepoint when nested), and a storage fault — SQLITE_FULL, an
 * I/O error, a lock held past the busy timeout — comes out as BRIDGE_STORAGE_ERROR on every thread,
 * with the transaction rolled back, so the connection takes the next write once the fault is gone.
 */
import type { Database } from "bun:sqlite";
import { isStorageFault, storageError } from "../storage-fault.ts";

export function writeImmediate<T>(db: Database, fn: () => T): T {
  const outermost = !db.inTransaction;
  try {
    return db.transaction(fn).immediate();
  } catch (e) {
    if (!isStorageFault(e)) throw e;
    // a COMMIT that failed can leave the transaction open; the next BEGIN would then fail for good
    if (outermost && db.inTransaction) {
      try {
        db.run("ROLLBACK");
      } catch {
        // nothing left to roll back
      }
    }
    throw storageError(e);
  }
}
