/**
 * The tasks table: submission insert (docs/task-model.md#submission step 13.5), reads and listings (docs/bridge-rpc.md#methods, docs/task-model.md#the-state-database), the
 * table-driven state transition with its effects (docs/task-model.md#states-and-transitions), provider facts (docs/task-model.md#execution, COALESCE), and
 * the retention GC queries (docs/task-model.md#retention).
 *
 * Offers: `insertTask`, `getTask`, `findByIdempotencyKey`, `listActive`, `listTerminalByMark`, `listTasks`,
 * `transition`, `endTask`, `recordProvider`, `gcCandidates`, `deleteTask`, `deleteTasks` and their option/result types.
 * Every write runs in its own `BEGIN IMMEDIATE` transaction (nested calls become savepoints).
 */
import type { Database } from "bun:sqlite";
import { type ErrorCode, ServerFsError } from "../errors.ts";
import { LIMITS } from "../limits.ts";
import { cutErrorMessage } from "../redact.ts";
import { type AppendResult, insertEvents } from "./events.ts";
import { type EventInput, type NewTask, type ResultStorage, TASK_COLUMNS, type TaskRow } from "./rows.ts";
import { ACTIVE_STATUSES, isTerminal, sourcesOf, type TaskStatus, TERMINAL_STATUSES } from "./task-states.ts";
import { writeImmediate } from "./write.ts";

const placeholders = (n: number) => Array.from({ length: n }, () => "?").join(", ");
const ACTIVE_IN = `(${ACTIVE_STATUSES.map((s) => `'${s}'`).join(", ")})`;
const TERMINAL_IN = `(${TERMINAL_STATUSES.map((s) => `'${s}'`).join(", ")})`;
const SELECT_TASK = `SELECT ${TASK_COLUMNS} FROM tasks`;

export type InsertTaskResult =
  | { kind: "inserted"; task: TaskRow }
  /** The unique index on idempotency_key was hit: the caller re-runs its idempotency lookup. */
  | { kind: "idempotency_key_taken"; existing: TaskRow };

/**
 * One string for the hot read (every `task.get`): `db.query` finds its cached statement by the SQL
 * text, and a constant's hash is computed once, where a template built per call is hashed per call.
 */
const GET_TASK = `${SELECT_TASK} WHERE task_id = ?`;

export function getTask(db: Database, taskId: string): TaskRow | null {
  return db.query<TaskRow, [string]>(GET_TASK).get(taskId);
}

export function findByIdempotencyKey(db: Database, key: string): TaskRow | null {
  return db.query<TaskRow, [string]>(`${SELECT_TASK} WHERE idempotency_key = ?`).get(key);
}

function countActive(db: Database): number {
  return db.query<{ n: number }, []>(`SELECT COUNT(*) AS n FROM tasks WHERE status IN ${ACTIVE_IN}`).get()!.n;
}

/** Every non-terminal task, oldest first (the order reconciliation walks them, docs/reliability.md#startup-before-the-socket-opens). */
export function listActive(db: Database): TaskRow[] {
  return db.query<TaskRow, []>(`${SELECT_TASK} WHERE status IN ${ACTIVE_IN} ORDER BY created_at, task_id`).all();
}

/**
 * Terminal tasks whose recorded provider mark is one of `marks`, oldest first: startup's lookup of the
 * runs whose finally path a crash cut short while something of theirs still lived
 * (docs/reliability.md#startup-before-the-socket-opens).
 */
export function listTerminalByMark(db: Database, marks: readonly string[]): TaskRow[] {
  if (marks.length === 0) return [];
  return db
    .query<TaskRow, string[]>(`${SELECT_TASK} WHERE provider_mark IN (${placeholders(marks.length)}) AND status IN ${TERMINAL_IN} ORDER BY created_at, task_id`)
    .all(...marks);
}

/**
 * Inserts a `queued` task after counting the active ones (≥ `maxActive` → AGENT_TASK_LIMIT_REACHED).
 * A taken task id is AGENT_TASK_EXISTS; a taken idempotency key is a result, not an error.
 */
export function insertTask(db: Database, row: NewTask, maxActive: number): InsertTaskResult {
  return writeImmediate(db, (): InsertTaskResult => {
    if (countActive(db) >= maxActive) {
      throw new ServerFsError("AGENT_TASK_LIMIT_REACHED", "the maximum number of active agent tasks is reached");
    }
    if (row.idempotency_key !== null) {
      const existing = findByIdempotencyKey(db, row.idempotency_key);
      if (existing) return { kind: "idempotency_key_taken", existing };
    }
    if (getTask(db, row.task_id)) throw new ServerFsError("AGENT_TASK_EXISTS", "the generated task id already exists");
    db.query(
      `INSERT INTO tasks (task_id, runtime, workdir_alias, workdir_slot, relative_cwd, profile, status,
           created_at, updated_at, deadline_at, continue_from_task_id, correlation_id, idempotency_key,
           submitter_sub, submitter_client_id, request_fingerprint, manifest_json, manifest_sha256)
         VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      row.task_id,
      row.runtime,
      row.workdir_alias,
      row.workdir_slot,
      row.relative_cwd,
      row.profile,
      row.created_at,
      row.created_at,
      row.deadline_at,
      row.continue_from_task_id,
      row.correlation_id,
      row.idempotency_key,
      row.submitter_sub,
      row.submitter_client_id,
      row.request_fingerprint,
      row.manifest_json,
      row.manifest_sha256,
    );
    return { kind: "inserted", task: getTask(db, row.task_id)! };
  });
}

export interface ListTasksQuery {
  status?: TaskStatus | null;
  /** 1..`max_task_page`, default `default_page` (limits.ts). */
  limit?: number;
  /** Exclusive cursor: the last task of the previous page. */
  beforeTaskId?: string | null;
}

export interface TaskPage {
  tasks: TaskRow[];
  /** The cursor for the next page, null when this page is the last. */
  nextBeforeTaskId: string | null;
}

/** Newest first by created_at, then task_id (task.list). An unknown cursor is AGENT_TASK_NOT_FOUND. */
export function listTasks(db: Database, q: ListTasksQuery = {}): TaskPage {
  const limit = q.limit ?? LIMITS.default_page;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > LIMITS.max_task_page) {
    throw new ServerFsError("INVALID_LIMIT", "limit is out of range");
  }
  const where: string[] = [];
  const args: (string | number)[] = [];
  if (q.status) {
    where.push("status = ?");
    args.push(q.status);
  }
  if (q.beforeTaskId) {
    const cursor = getTask(db, q.beforeTaskId);
    if (!cursor) throw new ServerFsError("AGENT_TASK_NOT_FOUND", "before_task_id names no task");
    where.push("(created_at < ? OR (created_at = ? AND task_id < ?))");
    args.push(cursor.created_at, cursor.created_at, cursor.task_id);
  }
  const clause = where.length > 0 ? ` WHERE ${where.join(" AND ")}` : "";
  // one row more than asked says whether another page exists
  const rows = db.query<TaskRow, (string | number)[]>(`${SELECT_TASK}${clause} ORDER BY created_at DESC, task_id DESC LIMIT ?`).all(...args, limit + 1);
  const tasks = rows.slice(0, limit);
  return { tasks, nextBeforeTaskId: rows.length > limit ? tasks[tasks.length - 1]!.task_id : null };
}

/** Result columns a transition may write with the move (the success path of docs/task-model.md#execution step 6). */
export interface ResultColumns {
  final_response?: string | null;
  result_storage?: ResultStorage;
  result_size_bytes?: number | null;
  result_sha256?: string | null;
}
const RESULT_COLUMNS = ["final_response", "result_storage", "result_size_bytes", "result_sha256"] as const satisfies readonly (keyof ResultColumns)[];

/** The targets `transition` handles; entering or leaving a waiting state goes through the request methods. */
export type TransitionTarget = Exclude<TaskStatus, "queued" | "waiting_for_approval" | "waiting_for_question">;

export interface TransitionOptions {
  /** Narrows the allowed sources of the docs/task-model.md#states-and-transitions table (e.g. only from `running`). */
  from?: readonly TaskStatus[];
  /** The transition time; defaults to now. */
  at?: string;
  /** Required when entering `failed` or `interrupted`, refused otherwise. The message is cut to 4,096 bytes. */
  error?: { code: ErrorCode; message: string };
  /** Result columns written in the same UPDATE. */
  set?: ResultColumns;
  /**
   * The provider mark, written with `starting` (docs/task-model.md#execution step 2): in the commit
   * the spawn waits for anyway, rather than in one of its own.
   */
  mark?: string;
  /** Lifecycle events appended in the same transaction; one that breaks a limit is dropped (docs/events.md#appending). */
  events?: readonly EventInput[];
}

export interface TransitionResult {
  task: TaskRow;
  events: AppendResult;
}

const needsError = (to: TaskStatus) => to === "failed" || to === "interrupted";

const REQUEST_STATES: readonly TaskStatus[] = ["waiting_for_approval", "waiting_for_question"];

/**
 * The sources the docs/task-model.md#states-and-transitions table allows for `to`, narrowed by `from`. A waiting state is entered, and left
 * for `running`, only through its request (requests.ts), which keeps pending_request_id consistent.
 */
function allowedSources(to: TaskStatus, from: readonly TaskStatus[] | undefined): TaskStatus[] {
  const table = REQUEST_STATES.includes(to) ? [] : sourcesOf(to).filter((s) => to !== "running" || !REQUEST_STATES.includes(s));
  const sources = from ? table.filter((s) => from.includes(s)) : table;
  if (sources.length === 0) throw new ServerFsError("INVALID_TASK_TRANSITION", `no allowed transition to ${to}`);
  return sources;
}

/**
 * One compare-and-swap move with the effects of docs/task-model.md#states-and-transitions, all in one transaction. Returns null when the
 * task was not in an allowed source state (a lost race or an already settled task); never throws
 * for that. Throws INVALID_TASK_TRANSITION only for a move the table can never allow.
 */
export function transition(db: Database, taskId: string, to: TransitionTarget, opts: TransitionOptions = {}): TransitionResult | null {
  if (needsError(to) !== (opts.error !== undefined)) {
    throw new TypeError(`an error code is required exactly for failed and interrupted (target ${to})`);
  }
  const sources = allowedSources(to, opts.from);
  const at = opts.at ?? new Date().toISOString();
  const terminal = isTerminal(to);

  const sets = ["status = ?", "updated_at = ?"];
  const args: (string | number | null)[] = [to, at];
  if (to === "starting") {
    sets.push("started_at = ?");
    args.push(at);
  }
  if (opts.mark !== undefined) {
    sets.push("provider_mark = ?");
    args.push(opts.mark);
  }
  if (terminal) {
    sets.push("completed_at = ?", "pending_request_id = NULL");
    args.push(at);
  }
  if (opts.error) {
    sets.push("error_code = ?", "error_message = ?");
    args.push(opts.error.code, cutErrorMessage(opts.error.message));
  }
  for (const column of RESULT_COLUMNS) {
    const value = opts.set?.[column];
    if (value === undefined) continue;
    sets.push(`${column} = ?`);
    args.push(value);
  }
  const update = `UPDATE tasks SET ${sets.join(", ")} WHERE task_id = ? AND status IN (${placeholders(sources.length)})`;

  return writeImmediate(db, (): TransitionResult | null => {
    if (db.query(update).run(...args, taskId, ...sources).changes === 0) return null;
    if (terminal) {
      db.query("UPDATE pending_requests SET status = 'stale', resolved_at = ? WHERE task_id = ? AND status = 'pending'").run(at, taskId);
    }
    const events = insertEvents(db, taskId, opts.events ?? [], { allowTerminal: true, onLimit: "skip" });
    return { task: getTask(db, taskId)!, events };
  });
}

/** How a task ends other than in success: `cancelled`, or `failed` / `interrupted` with its error. */
export type TaskEnd = { to: "cancelled" } | { to: "failed" | "interrupted"; error: { code: ErrorCode; message: string } };

export interface EndOptions {
  /** Narrows the allowed sources, as for `transition`. */
  from?: readonly TaskStatus[];
  /** Events appended before the end's own (reconciliation's `task.reconciled`). */
  before?: readonly EventInput[];
}

/**
 * `transition` to an unsuccessful end together with that end's lifecycle event: `task.cancelled`,
 * or `task.failed` / `task.interrupted` carrying the error code (docs/events.md). Every such end
 * goes through here, so the event and the error columns cannot disagree.
 */
export function endTask(db: Database, taskId: string, end: TaskEnd, opts: EndOptions = {}): TransitionResult | null {
  const from = opts.from ? { from: opts.from } : {};
  const before = opts.before ?? [];
  if (end.to === "cancelled") {
    return transition(db, taskId, "cancelled", { ...from, events: [...before, { type: "task.cancelled", payload: {} }] });
  }
  return transition(db, taskId, end.to, {
    ...from,
    error: end.error,
    events: [...before, { type: `task.${end.to}`, payload: { error_code: end.error.code } }],
  });
}

export interface ProviderFacts {
  pgid?: number | null;
  startTime?: number | null;
  mark?: string | null;
  nativeSessionId?: string | null;
  nativeTurnId?: string | null;
}

/** Records what is known about the provider; a null or absent value never overwrites a stored one. */
export function recordProvider(db: Database, taskId: string, facts: ProviderFacts): TaskRow | null {
  return writeImmediate(db, (): TaskRow | null => {
    const changed = db
      .query(
        `UPDATE tasks SET provider_pgid = COALESCE(?, provider_pgid),
             provider_start_time = COALESCE(?, provider_start_time), provider_mark = COALESCE(?, provider_mark),
             native_session_id = COALESCE(?, native_session_id), native_turn_id = COALESCE(?, native_turn_id)
           WHERE task_id = ?`,
      )
      .run(facts.pgid ?? null, facts.startTime ?? null, facts.mark ?? null, facts.nativeSessionId ?? null, facts.nativeTurnId ?? null, taskId).changes;
    return changed === 0 ? null : getTask(db, taskId);
  });
}

/**
 * Terminal tasks completed before `cutoff`, oldest first (docs/task-model.md#retention). The unary `+` keeps SQLite off the
 * status index, which would visit every retained task on every pass (about 40 ms per pass with
 * 100,000 of them, paid by every submit); the completed_at index visits only the expired ones.
 */
export function gcCandidates(db: Database, cutoff: string, limit: number): TaskRow[] {
  return db
    .query<TaskRow, [string, number]>(
      `${SELECT_TASK} WHERE +status IN ${TERMINAL_IN} AND completed_at IS NOT NULL AND completed_at < ?
       ORDER BY completed_at, task_id LIMIT ?`,
    )
    .all(cutoff, limit);
}

/** Deletes a terminal task; its events and requests cascade. An active task is never deleted (false). */
export function deleteTask(db: Database, taskId: string): boolean {
  return deleteTasks(db, [taskId]).length > 0;
}

/**
 * `deleteTask` for a whole GC batch in one transaction: with `synchronous = FULL` a commit per task
 * cost more than the rest of a GC pass together. Returns the ids deleted (active or unknown ones are
 * left alone).
 */
export function deleteTasks(db: Database, taskIds: readonly string[]): string[] {
  const del = db.query(`DELETE FROM tasks WHERE task_id = ? AND status IN ${TERMINAL_IN}`);
  return writeImmediate(db, () => taskIds.filter((id) => del.run(id).changes > 0));
}
