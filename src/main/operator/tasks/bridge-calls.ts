/** The Bridge calls the `serverfs tasks` subcommands make, and how they paint a task's status. */
import type { BridgeClient } from "../../../shared/bridge-protocol/client.ts";
import { paint, type Style } from "../output.ts";

const STATUS_STYLE: Partial<Record<string, Style>> = {
  succeeded: "green",
  failed: "red",
  interrupted: "red",
  cancelled: "yellow",
  waiting_for_approval: "yellow",
  waiting_for_question: "yellow",
};
export const status = (s: string) => {
  const style = STATUS_STYLE[s];
  return style ? paint(style, s) : s;
};

export const getTask = (client: BridgeClient, taskId: string) => client.call("task.get", { task_id: taskId });

export function eventsPage(client: BridgeClient, taskId: string, after: number, limit: number, waitMs = 0) {
  return client.call("task.events", { task_id: taskId, after_event_id: after, limit, wait_ms: waitMs }, { extraTimeoutMs: waitMs });
}
