/**
 * What the database holds, counted for the Bridge's metrics (docs/console.md#metrics): tasks by status
 * and runtime, open requests by kind, and how many events were ever appended (the `events` table's
 * AUTOINCREMENT sequence, which retention never lowers). Offers `StoreCounts`, `storeCounts`.
 */
import type { Database } from "bun:sqlite";

export interface StoreCounts {
  tasks: { status: string; runtime: string; count: number }[];
  pending_requests: { kind: string; count: number }[];
  events_appended: number;
}

export function storeCounts(db: Database): StoreCounts {
  const tasks = db
    .query<{ status: string; runtime: string; count: number }, []>(
      "SELECT status, runtime, COUNT(*) AS count FROM tasks GROUP BY status, runtime ORDER BY status, runtime",
    )
    .all();
  const pending = db
    .query<{ kind: string; count: number }, []>("SELECT kind, COUNT(*) AS count FROM pending_requests WHERE status = 'pending' GROUP BY kind ORDER BY kind")
    .all();
  // sqlite_sequence has no row for `events` until the first append
  const seq = db.query<{ seq: number }, []>("SELECT seq FROM sqlite_sequence WHERE name = 'events'").get();
  return { tasks, pending_requests: pending, events_appended: seq?.seq ?? 0 };
}
