/** Events as `serverfs tasks events` and `tail` print them: one line each, under a shared header. */
import type { BridgeClient } from "../../../shared/bridge-protocol/client.ts";
import type { TaskEvent } from "../../../shared/bridge-protocol/results.ts";
import { LIMITS } from "../../../shared/limits.ts";
import { paint, visible } from "../output.ts";
import { eventsPage } from "./bridge-calls.ts";

/** How much of one payload value an event line shows. */
const VALUE_CHARS = 80;
/** How much of an event's text (an agent's message) its line shows. */
const TEXT_CHARS = 160;

function valueText(value: unknown): string {
  const text = typeof value === "string" && /^[\w.:/@+-]+$/.test(value) ? value : JSON.stringify(value);
  return text.length > VALUE_CHARS ? `${text.slice(0, VALUE_CHARS - 1)}…` : text;
}

/**
 * What an event says, on one line: its text where it has one (an agent's message, a tool's output),
 * quoted and cut, then the other payload fields as short `key=value` pairs. JSON quoting escapes the
 * C0 controls; the line shows it through `visible` for DEL, the C1 controls and bidirectional overrides.
 */
function eventDetail(payload: Record<string, unknown>): string {
  const text = typeof payload["text"] === "string" ? (payload["text"] as string) : null;
  const rest = Object.entries(payload)
    .filter(([k]) => k !== "text")
    .map(([k, val]) => `${k}=${valueText(val)}`)
    .join(" ");
  if (text === null) return rest;
  const flat = text.replace(/\s*\n\s*/g, " ⏎ ").trim();
  const shown = flat.length > TEXT_CHARS ? `${flat.slice(0, TEXT_CHARS - 1)}…` : flat;
  return `${JSON.stringify(shown)}${rest === "" ? "" : ` ${rest}`}`;
}

/**
 * Events of one task as a person follows them: `#n` counts within the task (1 is its first event),
 * EVENT is the global id that `--after` takes. `events` and `tail` share these fixed widths, so a
 * line arriving alone in `tail` lines up with the header like a table.
 */
const COLUMNS = [
  ["#", 5],
  ["EVENT", 8],
  ["AT", 24],
  ["TYPE", 26],
] as const;
export const eventsHeader = () => paint("bold", `${COLUMNS.map(([h, w]) => h.padEnd(w)).join("  ")}  DETAIL`);
export const eventLine = (n: number, e: TaskEvent) =>
  `${[`#${n}`, String(e.event_id), e.created_at, e.event_type].map((cell, i) => cell.padEnd(COLUMNS[i]![1])).join("  ")}  ${visible(eventDetail(e.payload))}`.trimEnd();

/** How many of the task's events come at or before the global id `after` (so `#n` stays the task's own count). */
export async function countThrough(client: BridgeClient, taskId: string, after: number): Promise<number> {
  let n = 0;
  for (let cursor = 0; cursor < after; ) {
    const page = await eventsPage(client, taskId, cursor, LIMITS.max_event_page);
    const upTo = page.events.filter((e) => e.event_id <= after);
    n += upTo.length;
    if (upTo.length < page.events.length || page.events.length === 0) break;
    cursor = page.next_after_event_id;
  }
  return n;
}
