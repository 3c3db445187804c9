/**
 * Pending human-in-the-loop requests (docs/task-model.md#human-in-the-loop-requests, docs/task-model.md#deadlines-and-interaction-expiry): opening one together with the task's move
 * to a waiting state, and the three ways it stops being pending — resolved, withdrawn, expired — each
 * a compare-and-swap on the request still being `pending`, so only one of racing timers, sweeps and
 * replies wins.
 *
 * Offers: `openRequest`, `getRequest`, `resolveRequest`, `staleRequest`, `listPendingWithExpiry` and
 * their input/result types (`OpenRequestInput`, `Resolution`, `RequestChange`, `StaleReason`).
 */
import type { Database } from "bun:sqlite";
import { byteSize } from "../byte-size.ts";
import { ServerFsError } from "../errors.ts";
import type { ApprovalResolution, QuestionResolution } from "../hitl-validation.ts";
import { LIMITS } from "../limits.ts";
import { requestEventFields } from "../request-summary.ts";
import { byteLength } from "../utf8.ts";
import { type AppendResult, insertEvents } from "./events.ts";
import { type EventInput, REQUEST_COLUMNS, type RequestKind, type RequestRow, type TaskRow } from "./rows.ts";
import { getTask } from "./tasks.ts";
import { writeImmediate } from "./write.ts";

export interface OpenRequestInput {
  requestId: string;
  taskId: string;
  kind: RequestKind;
  /** Already redacted (docs/events.md#redaction); its compact JSON must fit `max_interaction_bytes`. */
  payload: Record<string, unknown>;
  /** Computed by the caller per docs/task-model.md#human-in-the-loop-requests step 2; never later than the task's deadline. */
  expiresAt: string;
  at?: string;
}

/** A checked reply (hitl-validation.ts), stored as the request's `resolution_json`. */
export type Resolution = ApprovalResolution | QuestionResolution;

export interface RequestChange {
  request: RequestRow;
  task: TaskRow;
  events: AppendResult;
}

/** `withdrawn`: the provider took its request back; `expired`: `expires_at` was reached (docs/task-model.md#deadlines-and-interaction-expiry). */
export type StaleReason = "withdrawn" | "expired";

const waitingState = (kind: RequestKind) => (kind === "approval" ? "waiting_for_approval" : "waiting_for_question");
const SERVICE = { allowTerminal: true, onLimit: "skip" } as const;

export function getRequest(db: Database, requestId: string): RequestRow | null {
  return db.query<RequestRow, [string]>(`SELECT ${REQUEST_COLUMNS} FROM pending_requests WHERE request_id = ?`).get(requestId);
}

/**
 * Inserts the request and moves the task `running → waiting_*` with `pending_request_id` set, in one
 * transaction with the `*.requested` event. Refusals, in order: AGENT_INTERACTION_TOO_LARGE,
 * AGENT_TASK_NOT_FOUND, REQUEST_PENDING, INVALID_TASK_TRANSITION (not running), REQUEST_EXISTS.
 */
export function openRequest(db: Database, input: OpenRequestInput): RequestChange {
  const payloadJson = JSON.stringify(input.payload);
  if (byteLength(payloadJson) > LIMITS.max_interaction_bytes) {
    throw new ServerFsError("AGENT_INTERACTION_TOO_LARGE", `the interaction payload is larger than ${byteSize(LIMITS.max_interaction_bytes)}`);
  }
  const at = input.at ?? new Date().toISOString();
  return writeImmediate(db, (): RequestChange => {
    const task = getTask(db, input.taskId);
    if (!task) throw new ServerFsError("AGENT_TASK_NOT_FOUND", "agent task not found");
    if (task.pending_request_id !== null) throw new ServerFsError("REQUEST_PENDING", "the task already has a pending request");
    if (task.status !== "running") throw new ServerFsError("INVALID_TASK_TRANSITION", "the task is not running");
    if (getRequest(db, input.requestId)) throw new ServerFsError("REQUEST_EXISTS", "the generated request id already exists");

    db.query(
      `INSERT INTO pending_requests (request_id, task_id, kind, status, payload_json, created_at, expires_at)
         VALUES (?, ?, ?, 'pending', ?, ?, ?)`,
    ).run(input.requestId, input.taskId, input.kind, payloadJson, at, input.expiresAt);
    db.query(
      `UPDATE tasks SET status = ?, pending_request_id = ?, updated_at = ?
         WHERE task_id = ? AND status = 'running' AND pending_request_id IS NULL`,
    ).run(waitingState(input.kind), input.requestId, at, input.taskId);
    const events = insertEvents(
      db,
      input.taskId,
      [
        {
          type: input.kind === "approval" ? "approval.requested" : "question.requested",
          // what is asked, in short, so an event reader need not fetch the request (docs/agent-requests.md)
          payload: { request_id: input.requestId, expires_at: input.expiresAt, ...requestEventFields(input.kind, input.payload) },
          at,
        },
      ],
      SERVICE,
    );
    return { request: getRequest(db, input.requestId)!, task: getTask(db, input.taskId)!, events };
  });
}

/**
 * Marks the request no longer pending; false when it already was not (the CAS lost). A resolution
 * also requires it to still be the task's pending request (`current`).
 */
function settle(db: Database, request: RequestRow, current: boolean, sets: string, args: (string | null)[]): boolean {
  const stillCurrent = current ? " AND request_id IS (SELECT pending_request_id FROM tasks WHERE task_id = ?)" : "";
  const where = current ? [request.request_id, request.task_id] : [request.request_id];
  return db.query(`UPDATE pending_requests SET ${sets} WHERE request_id = ? AND status = 'pending'${stillCurrent}`).run(...args, ...where).changes > 0;
}

/** Task `waiting_* → running`, clearing `pending_request_id`, only while it still names this request. */
function resume(db: Database, request: RequestRow, at: string): void {
  db.query(
    `UPDATE tasks SET status = 'running', pending_request_id = NULL, updated_at = ?
     WHERE task_id = ? AND status = ? AND pending_request_id = ?`,
  ).run(at, request.task_id, waitingState(request.kind), request.request_id);
}

function resolutionEvent(kind: RequestKind, resolution: Resolution) {
  if (kind === "approval" && "decision" in resolution) {
    return { type: "approval.resolved", payload: { decision: resolution.decision } };
  }
  if (kind === "question" && "answers" in resolution) {
    return { type: "question.answered", payload: { question_count: resolution.answers.length } };
  }
  throw new TypeError(`a resolution that does not fit a ${kind} request`);
}

/**
 * docs/bridge-rpc.md#taskapprovalrespond-and-taskquestionanswer resolution: only if the request is still pending AND still the task's pending request, set it
 * `resolved` with `resolved_at` / `resolution_json`, move the task back to `running` and append
 * `approval.resolved {decision}` / `question.answered {question_count}`. Null when the CAS lost; the
 * caller re-reads to tell REQUEST_ALREADY_RESOLVED from REQUEST_STALE.
 */
export function resolveRequest(db: Database, taskId: string, requestId: string, resolution: Resolution, opts: { at?: string } = {}): RequestChange | null {
  return changeRequest(db, taskId, requestId, opts.at, (before, at) => {
    const event = resolutionEvent(before.kind, resolution);
    const sets = "status = 'resolved', resolved_at = ?, resolution_json = ?";
    if (!settle(db, before, true, sets, [at, JSON.stringify(resolution)])) return null;
    resume(db, before, at);
    return event;
  });
}

/**
 * docs/task-model.md#human-in-the-loop-requests / docs/task-model.md#deadlines-and-interaction-expiry: the request becomes `stale` with `resolved_at` and `pending_request_id` is cleared.
 * Withdrawn: the task returns to `running`, `interaction.stale {request_id}`. Expired:
 * `interaction.expired {request_id, kind}`; the task stays waiting until the caller ends it
 * (docs/task-model.md#deadlines-and-interaction-expiry step 4). Null when the request was no longer pending (only the winner emits the event).
 */
export function staleRequest(db: Database, taskId: string, requestId: string, reason: StaleReason, opts: { at?: string } = {}): RequestChange | null {
  return changeRequest(db, taskId, requestId, opts.at, (before, at) => {
    if (!settle(db, before, false, "status = 'stale', resolved_at = ?", [at])) return null;
    if (reason === "withdrawn") {
      resume(db, before, at);
      return { type: "interaction.stale", payload: { request_id: requestId } };
    }
    db.query("UPDATE tasks SET pending_request_id = NULL, updated_at = ? WHERE task_id = ? AND pending_request_id = ?").run(at, taskId, requestId);
    return { type: "interaction.expired", payload: { request_id: requestId, kind: before.kind } };
  });
}

/**
 * One compare-and-swap on a request of `taskId`, in one immediate transaction: `apply` settles it
 * and names the event to append, or returns null when the CAS lost (then nothing changes).
 */
function changeRequest(
  db: Database,
  taskId: string,
  requestId: string,
  atOption: string | undefined,
  apply: (before: RequestRow, at: string) => Omit<EventInput, "at"> | null,
): RequestChange | null {
  const at = atOption ?? new Date().toISOString();
  return writeImmediate(db, (): RequestChange | null => {
    const before = getRequest(db, requestId);
    if (!before || before.task_id !== taskId) return null;
    const event = apply(before, at);
    if (!event) return null;
    const events = insertEvents(db, taskId, [{ ...event, at }], SERVICE);
    return { request: getRequest(db, requestId)!, task: getTask(db, taskId)!, events };
  });
}

/**
 * Pending requests that have an `expires_at`, earliest first: the expiry sweep's candidates. Whether
 * one is due is decided on the Bridge's monotonic clock, not by comparing with the wall clock here
 * (docs/task-model.md#time-and-clocks).
 */
export function listPendingWithExpiry(db: Database): RequestRow[] {
  return db
    .query<RequestRow, []>(
      `SELECT ${REQUEST_COLUMNS} FROM pending_requests
       WHERE status = 'pending' AND expires_at IS NOT NULL
       ORDER BY expires_at, request_id`,
    )
    .all();
}
