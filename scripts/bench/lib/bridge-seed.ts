/**
 * Databases for the Bridge benchmark, built before a Bridge starts: a `state.sqlite3` holding many
 * finished tasks (retained or past retention, optionally with spool files), and the "limit" for
 * event ingestion — raw batched inserts into a fresh file with the same schema and pragmas.
 *
 * The schema comes from the store itself (`Store.open` with `migrate: true`), so it is exactly
 * docs/task-model.md#the-state-database; only the bulk rows are written with plain SQL, in one transaction, because the
 * store inserts one task per transaction as a submission does.
 */
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { newMark, newTaskId } from "../../../src/shared/ids.ts";
import { buildManifest } from "../../../src/shared/manifest.ts";
import { writeSpool } from "../../../src/shared/spool.ts";
import { DB_FILE, Store } from "../../../src/shared/store/index.ts";
import { CREATE_INDEXES_AND_TRIGGERS, CREATE_TABLES } from "../../../src/shared/store/schema.ts";
import { addSecondsIso } from "../../../src/shared/time.ts";
import { encoder } from "../../../src/shared/utf8.ts";

export interface FinishedTasks {
  count: number;
  /**
   * The newest task's `completed_at`; each next one completed a second earlier, as a history
   * would. The retention cutoff decides whether GC collects them.
   */
  newestCompletedAt: string;
  /** Give each task a spool file of this text (through the spool module's own atomic write). */
  spoolText?: string;
}

/** Tasks as `bridgeEnv`'s config defines them: workdir "repo" on slot 1, the fake runtime. */
const WORKDIR = { alias: "repo", slot: 1, read_only: false, agent_mode: "workspace-write", agent_runtimes: ["fake"] } as const;
const LIFECYCLE = { max_active_tasks: 4, task_timeout_seconds: 86_400, interaction_timeout_seconds: 0, retention_hours: 168 };

/** Each seeded task carries the two lifecycle events a real successful run ends with. */
const EVENTS_PER_TASK = 2;

/**
 * Adds `count` succeeded `review` tasks to the state database in `stateDir` (created and migrated
 * if missing): full rows with a real manifest and `EVENTS_PER_TASK` events each. Returns their ids.
 */
export function seedFinishedTasks(stateDir: string, tasks: FinishedTasks): string[] {
  Store.open(stateDir, { migrate: true }).close();
  const ids = Array.from({ length: tasks.count }, newTaskId);
  const results = new Map<string, { size_bytes: number; sha256: string }>();
  if (tasks.spoolText !== undefined) for (const id of ids) results.set(id, writeSpool(stateDir, id, encoder.encode(tasks.spoolText)));

  const db = new Database(join(stateDir, DB_FILE));
  try {
    db.run("PRAGMA foreign_keys = ON");
    const insertTask = db.query(
      `INSERT INTO tasks (task_id, runtime, workdir_alias, workdir_slot, relative_cwd, profile, status,
         created_at, started_at, updated_at, completed_at, deadline_at, native_session_id, native_turn_id,
         provider_pgid, provider_start_time, provider_mark, final_response, result_storage,
         result_size_bytes, result_sha256, manifest_json, manifest_sha256, event_count)
       VALUES (?, 'fake', ?, ?, '', 'review', 'succeeded', ?, ?, ?, ?, ?, ?, ?, 4242, 1000, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const insertEvent = db.query("INSERT INTO events (task_id, event_type, payload_json, created_at) VALUES (?, ?, ?, ?)");
    db.transaction(() => {
      ids.forEach((id, i) => {
        const completedAt = addSecondsIso(tasks.newestCompletedAt, -i);
        const createdAt = addSecondsIso(completedAt, -2);
        const startedAt = addSecondsIso(completedAt, -1);
        const deadlineAt = addSecondsIso(createdAt, LIFECYCLE.task_timeout_seconds);
        const manifest = buildManifest({
          runtime: { name: "fake", version: "1", in_flight_recovery: "session-resume" },
          workdir: WORKDIR,
          relativeCwd: "",
          profile: "review",
          lifecycle: LIFECYCLE,
          continueFromTaskId: null,
          correlationId: null,
          deadlineAt,
          idempotencyKey: null,
        });
        const spooled = results.get(id);
        const text = "done";
        const result = spooled ?? { size_bytes: text.length, sha256: null };
        insertTask.run(
          id,
          WORKDIR.alias,
          WORKDIR.slot,
          createdAt,
          startedAt,
          completedAt,
          completedAt,
          deadlineAt,
          `fake-session-${id}`,
          `fake-turn-${id}`,
          newMark(),
          spooled ? "(preview)" : text,
          spooled ? "spool" : "inline",
          result.size_bytes,
          result.sha256,
          manifest.json,
          manifest.sha256,
          EVENTS_PER_TASK,
        );
        insertEvent.run(id, "task.started", '{"runtime":"fake"}', startedAt);
        const storage = spooled ? "spool" : "inline";
        insertEvent.run(id, "task.completed", JSON.stringify({ result_storage: storage, result_size_bytes: result.size_bytes }), completedAt);
      });
    })();
  } finally {
    db.close();
  }
  return ids;
}

export interface RawInserts {
  events: number;
  batch: number;
  events_per_s: number;
}

/**
 * The ingestion limit: `events` rows of the fake provider's payload shape inserted into a fresh
 * database with the docs/task-model.md#the-state-database schema, WAL and `synchronous = FULL`, `batch` rows per `BEGIN IMMEDIATE`
 * transaction, spread over `tasks` tasks as the Bridge's run spreads them.
 */
export function rawBatchedInserts(path: string, events: number, batch: number, tasks: number): RawInserts {
  const db = new Database(path);
  try {
    db.run("PRAGMA journal_mode = WAL");
    db.run("PRAGMA foreign_keys = ON");
    db.run("PRAGMA synchronous = FULL");
    for (const sql of [...CREATE_TABLES, ...CREATE_INDEXES_AND_TRIGGERS]) db.run(sql);
    const now = new Date().toISOString();
    const ids = Array.from({ length: tasks }, newTaskId);
    const insertTask = db.query(
      `INSERT INTO tasks (task_id, runtime, workdir_alias, workdir_slot, relative_cwd, profile, status, created_at, updated_at)
       VALUES (?, 'fake', 'repo', 1, '', 'review', 'running', ?, ?)`,
    );
    for (const id of ids) insertTask.run(id, now, now);
    const insert = db.query("INSERT INTO events (task_id, event_type, payload_json, created_at) VALUES (?, 'agent.message', ?, ?)");
    const started = performance.now();
    for (let done = 0; done < events; ) {
      const end = Math.min(events, done + batch);
      const taskId = ids[Math.floor(done / batch) % tasks]!;
      const at = new Date().toISOString();
      db.transaction(() => {
        for (let i = done; i < end; i++) insert.run(taskId, `{"text":"event ${i + 1}"}`, at);
      }).immediate();
      done = end;
    }
    const elapsed = performance.now() - started;
    return { events, batch, events_per_s: Math.round(events / (elapsed / 1000)) };
  } finally {
    db.close();
  }
}
