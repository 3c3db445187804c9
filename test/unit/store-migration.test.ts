import { Database } from "bun:sqlite";
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { Store } from "../../src/shared/store/index.ts";
import { V06_SCHEMA, V07_NEW_TASK_COLUMNS } from "../helpers/legacy-db.ts";
import { type TempDir, tempDir } from "../helpers/workspace.ts";
import { insert } from "./store-fixtures.ts";

const ACTIVE = "agt_aaaaaaaaaaaaaaaaaaaaaaaa";
const DONE = "agt_bbbbbbbbbbbbbbbbbbbbbbbb";
const QUIET = "agt_cccccccccccccccccccccccc";
const REQ = "req_aaaaaaaaaaaaaaaaaaaaaaaa";

type Row = Record<string, unknown>;
const LEGACY_TASKS: Row[] = [
  {
    task_id: ACTIVE,
    runtime: "codex",
    workdir_alias: "repo",
    workdir_slot: 1,
    relative_cwd: "src",
    profile: "workspace-write",
    status: "waiting_for_approval",
    created_at: "2025-06-01T10:00:00Z",
    started_at: "2025-06-01T10:00:01Z",
    updated_at: "2025-06-01T10:00:05Z",
    completed_at: null,
    continue_from_task_id: null,
    native_session_id: "thread-1",
    native_turn_id: "turn-1",
    final_response: null,
    error_code: null,
    error_message: null,
    pending_request_id: REQ,
  },
  {
    task_id: DONE,
    runtime: "claude",
    workdir_alias: "docs",
    workdir_slot: 2,
    relative_cwd: "",
    profile: "workspace-write",
    status: "succeeded",
    created_at: "2025-05-01T09:00:00.5Z",
    started_at: "2025-05-01T09:00:01Z",
    updated_at: "2025-05-01T09:10:00Z",
    completed_at: "2025-05-01T09:10:00Z",
    continue_from_task_id: ACTIVE,
    native_session_id: "sess-2",
    native_turn_id: null,
    final_response: "all done ✓",
    error_code: null,
    error_message: null,
    pending_request_id: null,
  },
  {
    task_id: QUIET,
    runtime: "codex",
    workdir_alias: "repo",
    workdir_slot: 1,
    relative_cwd: "",
    profile: "review",
    status: "failed",
    created_at: "2025-04-01T09:00:00Z",
    started_at: null,
    updated_at: "2025-04-01T09:00:02Z",
    completed_at: "2025-04-01T09:00:02Z",
    continue_from_task_id: null,
    native_session_id: null,
    native_turn_id: null,
    final_response: null,
    error_code: "AGENT_PROVIDER_ERROR",
    error_message: "agent runtime failed",
    pending_request_id: null,
  },
];
const LEGACY_EVENTS: Row[] = [
  { task_id: DONE, event_type: "task.started", payload_json: '{"runtime":"claude"}', created_at: "2025-05-01T09:00:01Z" },
  { task_id: ACTIVE, event_type: "task.started", payload_json: '{"runtime":"codex"}', created_at: "2025-06-01T10:00:02Z" },
  { task_id: DONE, event_type: "agent.message", payload_json: '{"text":"hi"}', created_at: "2025-05-01T09:05:00Z" },
  { task_id: DONE, event_type: "task.completed", payload_json: "{}", created_at: "2025-05-01T09:10:00Z" },
];
const LEGACY_REQUEST: Row = {
  request_id: REQ,
  task_id: ACTIVE,
  kind: "approval",
  status: "pending",
  payload_json: '{"category":"command","title":"run tests","available_decisions":[]}',
  created_at: "2025-06-01T10:00:05Z",
  resolved_at: null,
  resolution_json: null,
};

function insertRow(db: Database, table: string, row: Row): void {
  const keys = Object.keys(row);
  db.query(`INSERT INTO ${table} (${keys.join(", ")}) VALUES (${keys.map(() => "?").join(", ")})`).run(...(Object.values(row) as (string | number | null)[]));
}

let dir: TempDir;
afterEach(() => dir?.remove());

/** A v0.6 state_dir (rollback journal, as v0.6 left it) holding the legacy rows. */
function legacyStateDir(): string {
  dir = tempDir("serverfs-store-migration-");
  const stateDir = join(dir.path, "state");
  mkdirSync(stateDir, { mode: 0o700 });
  const db = new Database(join(stateDir, "state.sqlite3"));
  db.exec(V06_SCHEMA);
  for (const t of LEGACY_TASKS) insertRow(db, "tasks", t);
  for (const e of LEGACY_EVENTS) insertRow(db, "events", e);
  insertRow(db, "pending_requests", LEGACY_REQUEST);
  db.close();
  return stateDir;
}

/** Reads the file through a plain connection: the schema and every row, for before/after comparisons. */
function snapshot(stateDir: string) {
  const db = new Database(join(stateDir, "state.sqlite3"), { readonly: true });
  try {
    return {
      schemaVersion: db.query<{ schema_version: number }, []>("PRAGMA schema_version").get()!.schema_version,
      journalMode: db.query<{ journal_mode: string }, []>("PRAGMA journal_mode").get()!.journal_mode,
      master: db.query<Row, []>("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").all(),
      tasks: db.query<Row, []>("SELECT * FROM tasks ORDER BY task_id").all(),
      events: db.query<Row, []>("SELECT * FROM events ORDER BY event_id").all(),
      requests: db.query<Row, []>("SELECT * FROM pending_requests ORDER BY request_id").all(),
      taskColumns: db
        .query<{ name: string }, []>("PRAGMA table_info(tasks)")
        .all()
        .map((c) => c.name),
      requestColumns: db
        .query<{ name: string }, []>("PRAGMA table_info(pending_requests)")
        .all()
        .map((c) => c.name),
    };
  } finally {
    db.close();
  }
}

const migrate = (stateDir: string) => Store.open(stateDir, { migrate: true }).close();

const FRESH_TASK_COLUMNS = [
  "task_id",
  "runtime",
  "workdir_alias",
  "workdir_slot",
  "relative_cwd",
  "profile",
  "status",
  "created_at",
  "started_at",
  "updated_at",
  "completed_at",
  "deadline_at",
  "continue_from_task_id",
  "correlation_id",
  "idempotency_key",
  "request_fingerprint",
  "native_session_id",
  "native_turn_id",
  "provider_pgid",
  "provider_start_time",
  "provider_mark",
  "final_response",
  "result_storage",
  "result_size_bytes",
  "result_sha256",
  "manifest_json",
  "manifest_sha256",
  "error_code",
  "error_message",
  "pending_request_id",
  "event_count",
  "submitter_sub",
  "submitter_client_id",
];
const INDEXES_AND_TRIGGER = [
  "events_task_cursor",
  "pending_requests_task",
  "tasks_completed_at",
  "tasks_idempotency_key",
  "tasks_manifest_immutable",
  "tasks_status",
];
const namesOf = (master: Row[], types: string[]) =>
  master
    .filter((m) => types.includes(m.type as string) && !String(m.name).startsWith("sqlite_"))
    .map((m) => m.name)
    .sort();

describe("fresh schema", () => {
  test("a fresh file gets the three tables with every column, the indexes and the manifest trigger", () => {
    dir = tempDir("serverfs-store-migration-");
    const stateDir = join(dir.path, "state");
    migrate(stateDir);
    const s = snapshot(stateDir);
    expect(namesOf(s.master, ["table"])).toEqual(["events", "pending_requests", "tasks"]);
    expect(s.taskColumns).toEqual(FRESH_TASK_COLUMNS);
    expect(s.requestColumns).toEqual(["request_id", "task_id", "kind", "status", "payload_json", "created_at", "expires_at", "resolved_at", "resolution_json"]);
    expect(namesOf(s.master, ["index", "trigger"])).toEqual(INDEXES_AND_TRIGGER);
    expect(s.journalMode).toBe("wal");
  });
});

describe("/ the schema manifest immutability", () => {
  test("the trigger refuses any change of manifest_json or manifest_sha256; other columns still update", () => {
    dir = tempDir("serverfs-store-migration-");
    const stateDir = join(dir.path, "state");
    const store = Store.open(stateDir, { migrate: true });
    const id = insert(store);
    const before = store.getTask(id)!;
    const raw = new Database(join(stateDir, "state.sqlite3"));
    try {
      expect(() => raw.query("UPDATE tasks SET manifest_json = '{}' WHERE task_id = ?").run(id)).toThrow(/manifest is immutable/);
      expect(() => raw.query("UPDATE tasks SET manifest_sha256 = NULL WHERE task_id = ?").run(id)).toThrow(/manifest is immutable/);
      raw.query("UPDATE tasks SET manifest_json = manifest_json, updated_at = 'x' WHERE task_id = ?").run(id);
    } finally {
      raw.close();
    }
    const after = store.getTask(id)!;
    expect(after.manifest_json).toBe(before.manifest_json);
    expect(after.manifest_sha256).toBe(before.manifest_sha256);
    expect(after.updated_at).toBe("x");
    store.close();
  });

  test("a migrated row that has no manifest can never be given one", () => {
    const stateDir = legacyStateDir();
    migrate(stateDir);
    const raw = new Database(join(stateDir, "state.sqlite3"));
    try {
      expect(() => raw.query("UPDATE tasks SET manifest_json = '{}' WHERE task_id = ?").run(DONE)).toThrow(/manifest is immutable/);
    } finally {
      raw.close();
    }
  });
});

describe("migration of a v0.6 file", () => {
  test("every legacy value is kept, and every new column is null or its default", () => {
    const stateDir = legacyStateDir();
    const before = snapshot(stateDir);
    migrate(stateDir);
    const after = snapshot(stateDir);

    expect(after.journalMode).toBe("wal");
    expect(after.taskColumns).toEqual([...before.taskColumns, ...V07_NEW_TASK_COLUMNS, "submitter_sub", "submitter_client_id"]);
    expect(after.requestColumns).toEqual([...before.requestColumns, "expires_at"]);
    expect(namesOf(after.master, ["index", "trigger"])).toEqual(INDEXES_AND_TRIGGER);

    const counts: Record<string, number> = { [ACTIVE]: 1, [DONE]: 3, [QUIET]: 0 };
    for (const [i, legacy] of before.tasks.entries()) {
      const migrated = after.tasks[i]!;
      for (const [k, value] of Object.entries(legacy)) expect(migrated[k]).toEqual(value);
      expect(migrated).toMatchObject({
        deadline_at: null,
        correlation_id: null,
        result_storage: "inline",
        result_size_bytes: null,
        result_sha256: null,
        manifest_json: null,
        manifest_sha256: null,
        idempotency_key: null,
        request_fingerprint: null,
        provider_pgid: null,
        provider_start_time: null,
        provider_mark: null,
        event_count: counts[legacy.task_id as string],
      });
    }
    expect(after.events).toEqual(before.events);
    expect(after.requests).toEqual(before.requests.map((r) => ({ ...r, expires_at: null })));
  });

  test("a second migration changes nothing", () => {
    const stateDir = legacyStateDir();
    migrate(stateDir);
    const once = snapshot(stateDir);
    migrate(stateDir);
    expect(snapshot(stateDir)).toEqual(once);
  });

  test("migrated rows read as the task object objects with nulls where v0.6 kept no evidence, and stay usable", () => {
    const stateDir = legacyStateDir();
    const store = Store.open(stateDir, { migrate: true });
    try {
      const done = store.getTaskObject(DONE)!;
      expect(done).toMatchObject({
        status: "succeeded",
        created_at: "2025-05-01T09:00:00.5Z",
        deadline_at: null,
        manifest: null,
        manifest_sha256: null,
        final_response: "all done ✓",
        final_response_truncated: false,
        result: { storage: "inline", size_bytes: null, sha256: null, retrievable: false },
      });
      const active = store.getTaskObject(ACTIVE)!;
      expect(active.pending_request).toMatchObject({ request_id: REQ, status: "pending", expires_at: null });
      expect(store.listActive().map((t) => t.task_id)).toEqual([ACTIVE]);
      expect(store.listEvents(DONE, 0, 10).map((e) => e.event_type)).toEqual(["task.started", "agent.message", "task.completed"]);
      // a legacy active task is ended like any other; its pending request goes stale with it
      const ended = store.transition(ACTIVE, "interrupted", {
        error: { code: "BRIDGE_RESTARTED", message: "the bridge restarted" },
        events: [{ type: "task.interrupted", payload: { error_code: "BRIDGE_RESTARTED" } }],
      })!;
      expect(ended.task.event_count).toBe(2);
      expect(ended.events.lastEventId).toBeGreaterThan(LEGACY_EVENTS.length);
      expect(store.getRequest(REQ)?.status).toBe("stale");
    } finally {
      store.close();
    }
  });
});
