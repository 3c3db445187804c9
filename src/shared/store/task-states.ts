/**
 * The task states and the transition table of docs/task-model.md#states-and-transitions, as data. The store derives every
 * compare-and-swap `WHERE status IN (...)` from `TRANSITIONS`, so the table is the single source of
 * which moves exist.
 *
 * Offers: `TASK_STATUSES`, `ACTIVE_STATUSES`, `TERMINAL_STATUSES`, `TaskStatus`, `TerminalStatus`,
 * `isTerminal`, `TRANSITIONS` (from → allowed targets) and `sourcesOf(target)`.
 */

export const ACTIVE_STATUSES = ["queued", "starting", "running", "waiting_for_approval", "waiting_for_question"] as const;
export const TERMINAL_STATUSES = ["succeeded", "failed", "cancelled", "interrupted"] as const;
export const TASK_STATUSES = [...ACTIVE_STATUSES, ...TERMINAL_STATUSES] as const;

export type ActiveStatus = (typeof ACTIVE_STATUSES)[number];
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];
export type TaskStatus = ActiveStatus | TerminalStatus;

export const TRANSITIONS: Readonly<Record<TaskStatus, readonly TaskStatus[]>> = {
  queued: ["starting", "cancelled", "interrupted"],
  starting: ["running", "failed", "cancelled", "interrupted"],
  running: ["waiting_for_approval", "waiting_for_question", "succeeded", "failed", "cancelled", "interrupted"],
  waiting_for_approval: ["running", "cancelled", "interrupted"],
  waiting_for_question: ["running", "cancelled", "interrupted"],
  succeeded: [],
  failed: [],
  cancelled: [],
  interrupted: [],
};

export const isTerminal = (s: string): s is TerminalStatus => (TERMINAL_STATUSES as readonly string[]).includes(s);

/** The states a task may be in for a move to `target` to be allowed. */
export function sourcesOf(target: TaskStatus): TaskStatus[] {
  return TASK_STATUSES.filter((from) => TRANSITIONS[from].includes(target));
}
