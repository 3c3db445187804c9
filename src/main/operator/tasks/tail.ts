/**
 * `serverfs tasks tail <task_id> [--after N] [--json]`: follows events live with the long poll until the task
 * is terminal, then prints its final status; `--json` gives one JSON object per line.
 */
import type { BridgeClient } from "../../../shared/bridge-protocol/client.ts";
import type { TaskEvent } from "../../../shared/bridge-protocol/results.ts";
import { isServerFsError, ServerFsError } from "../../../shared/errors.ts";
import { LIMITS } from "../../../shared/limits.ts";
import { isTerminal } from "../../../shared/store/task-states.ts";
import { paint, printJsonLine, printLine, writeStdout } from "../output.ts";
import { eventsPage, getTask, status } from "./bridge-calls.ts";
import { countThrough, eventLine, eventsHeader } from "./event-lines.ts";

/** How long one `tail` long poll waits, below the Bridge's `max_wait_ms` (limits.ts). */
const TAIL_WAIT_MS = 20_000;

/** A line shown only on a terminal while nothing arrives, erased by the next line. */
const WAITING = (s: string) => `\r\x1b[K${paint("dim", `… waiting for events (the task is ${s})`)}`;
const ERASE = "\r\x1b[K";

export async function tail(client: BridgeClient, taskId: string, after: number, json: boolean): Promise<number> {
  const tty = process.stdout.isTTY === true && !json;
  let cursor = after;
  let n = after === 0 ? 0 : await countThrough(client, taskId, after);
  let waiting = false;
  const emit = (list: TaskEvent[]) => {
    if (waiting && list.length > 0) {
      writeStdout(ERASE);
      waiting = false;
    }
    for (const e of list) {
      n++;
      if (json) printJsonLine(e);
      else printLine(eventLine(n, e));
    }
    if (list.length > 0) cursor = list[list.length - 1]!.event_id;
  };
  let task = await getTask(client, taskId);
  if (!json) printLine(eventsHeader());
  try {
    for (;;) {
      const terminal = isTerminal(task.status);
      if (tty && !terminal && !waiting) {
        writeStdout(WAITING(task.status));
        waiting = true;
      }
      // once terminal nothing new is awaited: drain what is there without waiting, then stop
      const page = await eventsPage(client, taskId, cursor, LIMITS.max_event_page, terminal ? 0 : TAIL_WAIT_MS);
      emit(page.events);
      if (page.events.length === LIMITS.max_event_page) continue;
      if (terminal) break;
      task = await getTask(client, taskId);
    }
  } catch (e) {
    // A Bridge that has begun to shut down answers BRIDGE_CLOSED on a connection opened just before
    // it closed its listener: it is going away all the same, and docs/cli.md promises the one code.
    const gone = isServerFsError(e) && (e.code === "AGENT_BRIDGE_UNAVAILABLE" || e.code === "BRIDGE_CLOSED");
    if (!gone) throw e;
    if (waiting) writeStdout(ERASE);
    // the person is told where the story stops, then the coded error follows on stderr (exit 1)
    if (json) printJsonLine({ task_id: task.task_id, status: task.status, bridge: "unavailable" });
    else printLine(`task ${task.task_id} was ${status(task.status)} when the Bridge went away (last event #${n})`);
    throw e.code === "BRIDGE_CLOSED" ? new ServerFsError("AGENT_BRIDGE_UNAVAILABLE", "the Bridge is shutting down") : e;
  }
  if (waiting) writeStdout(ERASE);
  if (json) printJsonLine({ task_id: task.task_id, status: task.status, error_code: task.error_code });
  else printLine(`task ${task.task_id} ended ${status(task.status)}${task.error_code === null ? "" : `: ${task.error_code}`} after ${n} events`);
  return 0;
}
