/**
 * The Bridge's SQLite store (docs/task-model.md#the-state-database): the one API to the state database. The SQL lives in
 * the modules beside it (tasks.ts, events.ts, requests.ts), which the rest of the code never calls. Each thread opens its
 * own `Store` (its own connection to the one WAL file): the main thread with `migrate: true`, the provider and maintenance
 * workers without. No globals: two stores in one thread are independent connections.
 *
 * `Store.open(stateDir, { migrate, onMissing, log })` — docs/task-model.md#the-state-database safety checks and pragmas, STATE_DIR_UNSAFE
 * on violation; with `log`, every service event a limit dropped is logged (`service_event_dropped`, docs/events.md#appending),
 * whichever thread's write dropped it.
 *
 * Tasks (docs/bridge-rpc.md#methods, docs/task-model.md#states-and-transitions):
 * - `insertTask(row, maxActive)` → `{kind: "inserted", task}` | `{kind: "idempotency_key_taken", existing}`;
 *   throws AGENT_TASK_LIMIT_REACHED (active count ≥ maxActive, counted in the same transaction) or
 *   AGENT_TASK_EXISTS (task id taken).
 * - `getTask(id)`, `getTaskObject(id)` (the docs/task-model.md#the-task-object, or null), `findByIdempotencyKey(key)`,
 *   `listActive()` (by created_at), `listTerminalByMark(marks)`, `listTasks({status, limit, beforeTaskId})` and
 *   `listTaskObjects(...)` (rows / docs/task-model.md#the-task-object objects, newest first by created_at then task_id; INVALID_LIMIT
 *   outside 1..`max_task_page` (limits.ts); AGENT_TASK_NOT_FOUND for an unknown cursor).
 * - `transition(id, to, {from, at, error, set, events})` → `{task, events}` or null when the CAS lost.
 *   Targets: starting, running (from starting), succeeded, failed, cancelled, interrupted; waiting states
 *   are entered and left through the request methods. Terminal entry sets completed_at, error columns
 *   (failed / interrupted, message cut to 4,096 bytes), clears pending_request_id and stales the task's
 *   pending requests, together with the given lifecycle events (a limit-breaking one is dropped).
 * - `endTask(id, {to: "cancelled"} | {to: "failed" | "interrupted", error}, {from, before})`: `transition`
 *   with that end's own lifecycle event (`task.cancelled` / `task.failed` / `task.interrupted`).
 * - `recordProvider(id, {pgid, startTime, mark, nativeSessionId, nativeTurnId})` → row or null (COALESCE).
 *
 * Events (docs/events.md):
 * - `appendEvents(id, events, {allowTerminal})` → `{appended, lastEventId, broke, discarded}`: one
 *   transaction, in order, stops at the first event breaking a limit (`broke` names the code); a terminal
 *   or missing task discards the batch unless `allowTerminal` (reconciliation and operator events). A service
 *   event a limit breaks is logged.
 * - `appendProviderBatch(id, types, payloadJsons)`: the same for a provider batch, its payloads already compact
 *   JSON (the event writer's), unlogged: a broken limit ends the run with `broke` instead (docs/events.md#limits).
 * - `listEvents(id, afterEventId, limit)` → envelopes (docs/events.md#the-envelope) ascending; `maxEventId(id)` (0 when none);
 *   `latestEvent(id, type)`.
 *
 * Requests (docs/task-model.md#human-in-the-loop-requests, docs/task-model.md#deadlines-and-interaction-expiry):
 * - `openRequest({requestId, taskId, kind, payload, expiresAt})` → `{request, task, events}`; throws
 *   AGENT_INTERACTION_TOO_LARGE, AGENT_TASK_NOT_FOUND, REQUEST_PENDING, INVALID_TASK_TRANSITION, REQUEST_EXISTS.
 * - `getRequest(id)`, `resolveRequest(taskId, requestId, resolution)`, `staleRequest(taskId, requestId,
 *   "withdrawn" | "expired")` → change or null when the CAS lost; `listPendingWithExpiry()`.
 *
 * File: `fileLost()`, true once the database's path no longer names the file open here.
 *
 * Memory: `releaseMemory()`, `PRAGMA shrink_memory` on this connection.
 *
 * Metrics: `counts()` → tasks by status and runtime, open requests by kind, events ever appended.
 * Backup: `backupTo(file)` → `{bytes, tasks, events}`, an online `VACUUM INTO` a new 0600 file.
 *
 * Retention (docs/task-model.md#retention): `gcCandidates(cutoffIso, limit)` (terminal, completed_at < cutoff, oldest first),
 * `deleteTask(id)` → false for an active or unknown task (events and requests cascade);
 * `deleteTasks(ids)` → the ids deleted, one transaction for the whole batch.
 */
import type { Database } from "bun:sqlite";
import { join } from "node:path";
import type { AuditLog } from "../audit.ts";
import { type BackupReport, backupDatabase } from "./backup.ts";
import { type StoreCounts, storeCounts } from "./counts.ts";
import * as events from "./events.ts";
import { DB_FILE, type FileIdentity, type OpenOptions, openDatabase, sameFile } from "./open.ts";
import * as requests from "./requests.ts";
import type { EventInput, NewTask, RequestRow, TaskRow } from "./rows.ts";
import { type TaskObject, taskObject } from "./task-object.ts";
import * as tasks from "./tasks.ts";

export type { StoreCounts } from "./counts.ts";
export type { AppendOptions, AppendResult, EventEnvelope, EventLimitCode } from "./events.ts";
export { DB_FILE, MARKER_FILE, type OpenOptions } from "./open.ts";
export type {
  OpenRequestInput,
  RequestChange,
  Resolution,
  StaleReason,
} from "./requests.ts";
export type { EventInput, NewTask, RequestKind, RequestRow, RequestStatus, ResultStorage, TaskRow } from "./rows.ts";
export { type RequestObject, type ResultObject, requestObject, type TaskObject, taskObject } from "./task-object.ts";
export * from "./task-states.ts";
export type {
  EndOptions,
  InsertTaskResult,
  ListTasksQuery,
  ProviderFacts,
  ResultColumns,
  TaskEnd,
  TaskPage,
  TransitionOptions,
  TransitionResult,
  TransitionTarget,
} from "./tasks.ts";

export interface StoreOptions extends OpenOptions {
  /**
   * Where a service event a limit dropped is logged: docs/events.md#appending wants it dropped *and logged*, while the
   * state change it reports still commits.
   */
  log?: AuditLog;
}

export class Store {
  private constructor(
    private readonly db: Database,
    private readonly log: AuditLog | undefined,
    private readonly file: string,
    private readonly identity: FileIdentity,
  ) {}

  static open(stateDir: string, opts: StoreOptions = {}): Store {
    const { db, identity } = openDatabase(stateDir, opts);
    return new Store(db, opts.log, join(stateDir, DB_FILE), identity);
  }

  /**
   * The database's path no longer names the file this connection has open: it was removed or
   * replaced under it, and whatever is written now vanishes with the open file
   * (docs/reliability.md#the-state-database-stays-the-one-open).
   */
  fileLost(): boolean {
    return !sameFile(this.file, this.identity);
  }

  /** Passes a service write's change through, logging a limit-dropped event. */
  private reported<T extends { events: events.AppendResult } | null>(taskId: string, change: T): T {
    if (change?.events.broke) this.log?.warn("service_event_dropped", { task_id: taskId, error_code: change.events.broke });
    return change;
  }

  close(): void {
    this.db.close();
  }

  /** Frees what SQLite caches for this connection (the Bridge does it once idle: src/shared/release-memory.ts). */
  releaseMemory(): void {
    this.db.run("PRAGMA shrink_memory");
  }
  backupTo(target: string): BackupReport {
    return backupDatabase(this.db, target);
  }
  /** The counts behind the Bridge's metrics (`metrics.read`). */
  counts(): StoreCounts {
    return storeCounts(this.db);
  }

  // tasks

  insertTask(row: NewTask, maxActive: number): tasks.InsertTaskResult {
    return tasks.insertTask(this.db, row, maxActive);
  }
  getTask(taskId: string): TaskRow | null {
    return tasks.getTask(this.db, taskId);
  }
  /**
   * The docs/task-model.md#the-task-object with its pending request, read in one snapshot. A single SELECT is a snapshot by
   * itself; only a row that names a request is read again with it in one transaction (whose
   * BEGIN/COMMIT would otherwise cost about a tenth of every `task.get`).
   */
  getTaskObject(taskId: string): TaskObject | null {
    const row = tasks.getTask(this.db, taskId);
    if (row === null || row.pending_request_id === null) return row === null ? null : taskObject(row, null, events.usagePayloads(this.db, taskId));
    return this.db.transaction((): TaskObject | null => {
      const again = tasks.getTask(this.db, taskId);
      return again ? this.objectOf(again) : null;
    })();
  }
  private objectOf(row: TaskRow): TaskObject {
    return taskObject(row, row.pending_request_id ? requests.getRequest(this.db, row.pending_request_id) : null, events.usagePayloads(this.db, row.task_id));
  }
  findByIdempotencyKey(key: string): TaskRow | null {
    return tasks.findByIdempotencyKey(this.db, key);
  }
  listActive(): TaskRow[] {
    return tasks.listActive(this.db);
  }
  listTerminalByMark(marks: readonly string[]): TaskRow[] {
    return tasks.listTerminalByMark(this.db, marks);
  }
  listTasks(query: tasks.ListTasksQuery = {}): tasks.TaskPage {
    return tasks.listTasks(this.db, query);
  }
  /** `listTasks` as docs/task-model.md#the-task-object objects (what `task.list` answers), read in one snapshot. */
  listTaskObjects(query: tasks.ListTasksQuery = {}): { tasks: TaskObject[]; nextBeforeTaskId: string | null } {
    return this.db.transaction(() => {
      const page = tasks.listTasks(this.db, query);
      return { tasks: page.tasks.map((row) => this.objectOf(row)), nextBeforeTaskId: page.nextBeforeTaskId };
    })();
  }
  transition(taskId: string, to: tasks.TransitionTarget, opts: tasks.TransitionOptions = {}): tasks.TransitionResult | null {
    return this.reported(taskId, tasks.transition(this.db, taskId, to, opts));
  }
  endTask(taskId: string, end: tasks.TaskEnd, opts: tasks.EndOptions = {}): tasks.TransitionResult | null {
    return this.reported(taskId, tasks.endTask(this.db, taskId, end, opts));
  }
  recordProvider(taskId: string, facts: tasks.ProviderFacts): TaskRow | null {
    return tasks.recordProvider(this.db, taskId, facts);
  }

  // events

  appendEvents(taskId: string, batch: readonly EventInput[], opts: events.AppendOptions = {}): events.AppendResult {
    const result = events.appendEvents(this.db, taskId, batch, opts);
    this.reported(taskId, { events: result });
    return result;
  }
  appendProviderBatch(taskId: string, types: readonly string[], payloadJsons: readonly string[]): events.AppendResult {
    return events.appendSerialized(this.db, taskId, types, payloadJsons);
  }
  listEvents(taskId: string, afterEventId: number, limit: number): events.EventEnvelope[] {
    return events.listEvents(this.db, taskId, afterEventId, limit);
  }
  maxEventId(taskId: string): number {
    return events.maxEventId(this.db, taskId);
  }
  latestEvent(taskId: string, eventType: string): events.EventEnvelope | null {
    return events.latestEvent(this.db, taskId, eventType);
  }

  // pending requests

  openRequest(input: requests.OpenRequestInput): requests.RequestChange {
    return this.reported(input.taskId, requests.openRequest(this.db, input));
  }
  getRequest(requestId: string): RequestRow | null {
    return requests.getRequest(this.db, requestId);
  }
  resolveRequest(taskId: string, requestId: string, resolution: requests.Resolution, opts: { at?: string } = {}): requests.RequestChange | null {
    return this.reported(taskId, requests.resolveRequest(this.db, taskId, requestId, resolution, opts));
  }
  staleRequest(taskId: string, requestId: string, reason: requests.StaleReason, opts: { at?: string } = {}): requests.RequestChange | null {
    return this.reported(taskId, requests.staleRequest(this.db, taskId, requestId, reason, opts));
  }
  listPendingWithExpiry(): RequestRow[] {
    return requests.listPendingWithExpiry(this.db);
  }

  // retention

  gcCandidates(cutoff: string, limit: number): TaskRow[] {
    return tasks.gcCandidates(this.db, cutoff, limit);
  }
  deleteTask(taskId: string): boolean {
    return tasks.deleteTask(this.db, taskId);
  }
  deleteTasks(taskIds: readonly string[]): string[] {
    return tasks.deleteTasks(this.db, taskIds);
  }
}
