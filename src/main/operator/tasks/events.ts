/** `serverfs tasks events <task_id> [--after N] [--limit N] [--json]`: every event after the cursor, in order. */
import type { BridgeClient } from "../../../shared/bridge-protocol/client.ts";
import type { TaskEvent } from "../../../shared/bridge-protocol/results.ts";
import { LIMITS } from "../../../shared/limits.ts";
import { printJson, printLine } from "../output.ts";
import { eventsPage } from "./bridge-calls.ts";
import { countThrough, eventLine, eventsHeader } from "./event-lines.ts";

export async function events(client: BridgeClient, taskId: string, after: number, limit: number | undefined, json: boolean): Promise<number> {
  const collected: TaskEvent[] = [];
  let cursor = after;
  let correlationId: string | null = null;
  for (;;) {
    const want = limit === undefined ? LIMITS.max_event_page : Math.min(LIMITS.max_event_page, limit - collected.length);
    const page = await eventsPage(client, taskId, cursor, want);
    correlationId = page.correlation_id;
    collected.push(...page.events);
    cursor = page.next_after_event_id;
    if (page.events.length === 0 || (limit !== undefined && collected.length >= limit)) break;
  }
  if (json) {
    printJson({ correlation_id: correlationId, events: collected, next_after_event_id: cursor });
    return 0;
  }
  if (collected.length === 0) {
    printLine("no events");
    return 0;
  }
  const before = after === 0 ? 0 : await countThrough(client, taskId, after);
  printLine(eventsHeader());
  for (const [i, e] of collected.entries()) printLine(eventLine(before + i + 1, e));
  return 0;
}
