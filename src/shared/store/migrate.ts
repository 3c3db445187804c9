/**
 * The additive, idempotent migration of docs/task-model.md#the-state-database, run by the main thread at every start
 * (after WAL is set) in one `BEGIN IMMEDIATE` transaction. A fresh file gets the docs/task-model.md#the-state-database schema; a v0.6
 * file gets the missing columns with null or their default, never invented evidence; a current file
 * is left exactly as it is.
 *
 * Offers: `migrate(db)`.
 */
import type { Database } from "bun:sqlite";
import { CREATE_INDEXES_AND_TRIGGERS, CREATE_TABLES } from "./schema.ts";

/** docs/task-model.md#the-state-database step 2, in the spec's order: the tasks columns a v0.6 file lacks. */
const ADDED_TASK_COLUMNS: readonly (readonly [name: string, decl: string])[] = [
  ["deadline_at", "TEXT"],
  ["correlation_id", "TEXT"],
  ["result_storage", "TEXT NOT NULL DEFAULT 'inline'"],
  ["result_size_bytes", "INTEGER"],
  ["result_sha256", "TEXT"],
  ["manifest_json", "TEXT"],
  ["manifest_sha256", "TEXT"],
  ["event_count", "INTEGER NOT NULL DEFAULT 0"],
  ["idempotency_key", "TEXT"],
  ["request_fingerprint", "TEXT"],
  ["provider_pgid", "INTEGER"],
  ["provider_start_time", "INTEGER"],
  ["provider_mark", "TEXT"],
];

const columnsOf = (db: Database, table: string): Set<string> =>
  new Set(
    db
      .query<{ name: string }, []>(`PRAGMA table_info(${table})`)
      .all()
      .map((c) => c.name),
  );

/** What a migration started from: a new file, a v0.6 file, or one already current (nothing to do). */
export type MigratedFrom = "new" | "v0.6" | "current";

export function migrate(db: Database): MigratedFrom {
  return db
    .transaction((): MigratedFrom => {
      const before = columnsOf(db, "tasks");
      for (const sql of CREATE_TABLES) db.run(sql);

      const taskColumns = columnsOf(db, "tasks");
      const from: MigratedFrom = before.size === 0 ? "new" : ADDED_TASK_COLUMNS.some(([name]) => !before.has(name)) ? "v0.6" : "current";
      for (const [name, decl] of ADDED_TASK_COLUMNS) {
        if (!taskColumns.has(name)) db.run(`ALTER TABLE tasks ADD COLUMN ${name} ${decl}`);
      }
      if (!taskColumns.has("event_count")) {
        db.run("UPDATE tasks SET event_count = (SELECT COUNT(*) FROM events WHERE events.task_id = tasks.task_id)");
      }

      if (!columnsOf(db, "pending_requests").has("expires_at")) {
        db.run("ALTER TABLE pending_requests ADD COLUMN expires_at TEXT");
      }
      // after v0.7: who submitted a task over OAuth; null for every older task (nobody recorded it)
      for (const name of ["submitter_sub", "submitter_client_id"]) {
        if (!taskColumns.has(name)) db.run(`ALTER TABLE tasks ADD COLUMN ${name} TEXT`);
      }

      for (const sql of CREATE_INDEXES_AND_TRIGGERS) db.run(sql);
      return from;
    })
    .immediate();
}
