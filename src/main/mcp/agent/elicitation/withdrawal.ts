/**
 * Noticing that the request a form shows stopped being pending while the human still has the form
 * (docs/elicitation.md#withdrawn-forms): answered elsewhere, expired, withdrawn by the provider, or its
 * task ended. Each of those commits an event of the task or ends it, and either wakes a `task.events`
 * long poll at once; after each wake the task is read again. The poll starts from the task's newest
 * event (`last_event_id`), read before the first look at the request, so nothing that happens after
 * that look is missed and no history is paged through.
 */
import type { Result } from "../../../../shared/bridge-protocol/results.ts";
import type { AgentDeps } from "../agent-tool.ts";
import { openRequest } from "./pending-form.ts";

/**
 * One long poll's bound. The wake is what makes the notice prompt; the bound only matters for a state
 * change that could not log its event (a task at its event limit, docs/events.md#limits).
 */
const WATCH_WAIT_MS = 5_000;

const lastEventId = (page: Result<"task.events">): number => {
  const id = page.last_event_id;
  // a Bridge that does not say cannot be watched: the form then stays until the human answers it
  if (id === undefined) throw new Error("task.events has no last_event_id");
  return id;
};

/** Resolves once `requestId` is no longer the task's pending request; rejects when `signal` aborts or the Bridge fails. */
export async function untilWithdrawn(deps: AgentDeps, taskId: string, requestId: string, signal: AbortSignal): Promise<void> {
  let cursor = lastEventId(await deps.bridge("task.events", { task_id: taskId, after_event_id: 0, limit: 1 }, { signal }));
  for (;;) {
    const task = await deps.bridge("task.get", { task_id: taskId }, { signal });
    if (openRequest(task)?.request_id !== requestId) return;
    const page = await deps.bridge(
      "task.events",
      { task_id: taskId, after_event_id: cursor, limit: 1, wait_ms: WATCH_WAIT_MS },
      { signal, extraTimeoutMs: WATCH_WAIT_MS },
    );
    cursor = lastEventId(page);
  }
}
