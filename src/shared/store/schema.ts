/**
 * The fresh-database schema of docs/task-model.md#the-state-database, verbatim, in the two groups the migration (docs/task-model.md#the-state-database)
 * runs at different steps: the tables first, the indexes and the manifest trigger last (after any
 * missing column has been added, since an index or trigger may name one).
 *
 * Offers: `CREATE_TABLES`, `CREATE_INDEXES_AND_TRIGGERS` (arrays of single statements).
 */

export const CREATE_TABLES: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS tasks (
  task_id TEXT PRIMARY KEY, runtime TEXT NOT NULL, workdir_alias TEXT NOT NULL,
  workdir_slot INTEGER NOT NULL, relative_cwd TEXT NOT NULL, profile TEXT NOT NULL,
  status TEXT NOT NULL, created_at TEXT NOT NULL, started_at TEXT, updated_at TEXT NOT NULL,
  completed_at TEXT, deadline_at TEXT, continue_from_task_id TEXT, correlation_id TEXT,
  idempotency_key TEXT, request_fingerprint TEXT,
  native_session_id TEXT, native_turn_id TEXT, provider_pgid INTEGER, provider_start_time INTEGER,
  provider_mark TEXT,
  final_response TEXT, result_storage TEXT NOT NULL DEFAULT 'inline',
  result_size_bytes INTEGER, result_sha256 TEXT, manifest_json TEXT, manifest_sha256 TEXT,
  error_code TEXT, error_message TEXT, pending_request_id TEXT,
  event_count INTEGER NOT NULL DEFAULT 0, submitter_sub TEXT, submitter_client_id TEXT)`,
  `CREATE TABLE IF NOT EXISTS events (
  event_id INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id TEXT NOT NULL REFERENCES tasks(task_id) ON DELETE CASCADE,
  event_type TEXT NOT NULL, payload_json TEXT NOT NULL, created_at TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS pending_requests (
  request_id TEXT PRIMARY KEY,
  task_id TEXT NOT NULL REFERENCES tasks(task_id) ON DELETE CASCADE,
  kind TEXT NOT NULL, status TEXT NOT NULL, payload_json TEXT NOT NULL, created_at TEXT NOT NULL,
  expires_at TEXT, resolved_at TEXT, resolution_json TEXT)`,
];

export const CREATE_INDEXES_AND_TRIGGERS: readonly string[] = [
  "CREATE INDEX IF NOT EXISTS events_task_cursor ON events(task_id, event_id)",
  "CREATE INDEX IF NOT EXISTS pending_requests_task ON pending_requests(task_id, status)",
  "CREATE INDEX IF NOT EXISTS tasks_status ON tasks(status)",
  "CREATE INDEX IF NOT EXISTS tasks_completed_at ON tasks(completed_at) WHERE completed_at IS NOT NULL",
  `CREATE UNIQUE INDEX IF NOT EXISTS tasks_idempotency_key ON tasks(idempotency_key)
  WHERE idempotency_key IS NOT NULL`,
  `CREATE TRIGGER IF NOT EXISTS tasks_manifest_immutable
  BEFORE UPDATE OF manifest_json, manifest_sha256 ON tasks
  WHEN NEW.manifest_json IS NOT OLD.manifest_json OR NEW.manifest_sha256 IS NOT OLD.manifest_sha256
  BEGIN SELECT RAISE(ABORT, 'manifest is immutable'); END`,
];
