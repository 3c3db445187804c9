/**
 * What the Bridge acknowledged to a client during a ground: every submit it answered (with the task
 * the driver asked for), every event a `task.events` page returned, every terminal status a `task.get`
 * returned. The invariants are checked against this after each restart: an acknowledgement is a promise.
 */
import type { EventEnvelope } from "../../../test/helpers/bridge.ts";

export interface Submitted {
  taskId: string;
  prompt: string;
  profile: "review" | "workspace-write";
  slot: number;
  /** The final text a success must carry, when the prompt fixes one. */
  expectFinal: string | null;
  /** For an `events:N` prompt, N. */
  events: number | null;
}

const TERMINAL = new Set(["succeeded", "failed", "cancelled", "interrupted"]);

export class Ledger {
  readonly tasks = new Map<string, Submitted>();
  /** task id → event id → `type payload` as first read. */
  readonly events = new Map<string, Map<number, string>>();
  /** task id → the terminal status first read. */
  readonly terminal = new Map<string, string>();
  ackedEvents = 0;

  submitted(s: Submitted): void {
    this.tasks.set(s.taskId, s);
  }

  sawEvents(taskId: string, events: readonly EventEnvelope[]): void {
    const seen = this.events.get(taskId) ?? new Map<number, string>();
    this.events.set(taskId, seen);
    for (const e of events) {
      if (!seen.has(e.event_id)) this.ackedEvents++;
      seen.set(e.event_id, eventKey(e));
    }
  }

  sawTask(task: Record<string, unknown>): void {
    const status = String(task["status"]);
    const id = String(task["task_id"]);
    if (TERMINAL.has(status) && !this.terminal.has(id)) this.terminal.set(id, status);
  }
}

export const eventKey = (e: Pick<EventEnvelope, "event_type" | "payload">): string => `${e.event_type} ${JSON.stringify(e.payload)}`;

export const isTerminalStatus = (status: string): boolean => TERMINAL.has(status);
