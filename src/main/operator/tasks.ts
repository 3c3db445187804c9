/**
 * `serverfs tasks list|show|events|tail` (docs/cli.md): the operator's read-only view of the
 * Bridge's tasks, through the RPC socket only (`task.list`, `task.get`, `task.events`; docs/bridge-rpc.md#methods).
 *
 * - `list [--status S] [--limit N] [--json]`: newest first, one row per task.
 * - `show <task_id> [--json]`: the task object, with the final response only as a short preview.
 * - `events <task_id> [--after N] [--limit N] [--json]`: every event after the cursor, in order.
 * - `tail <task_id> [--after N] [--json]`: follows events live with the long poll until the task
 *   is terminal, then prints its final status; `--json` gives one JSON object per line.
 *
 * The prompt is never stored, so never shown; the final response appears only in `show`'s preview.
 * Nothing here writes to stderr: a coded failure propagates to cli.ts (`serverfs: CODE: message`, exit 1).
 */
import * as v from "valibot";
import { BridgeClient } from "../../shared/bridge-protocol/client.ts";
import { loadConfig } from "../../shared/config/load.ts";
import { suggestion } from "../../shared/did-you-mean.ts";
import { isServerFsError, ServerFsError } from "../../shared/errors.ts";
import { LIMITS } from "../../shared/limits.ts";
import { isTerminal, TASK_STATUSES } from "../../shared/store/task-states.ts";
import { cutUtf8 } from "../../shared/utf8.ts";
import { booleanFlag, intFlag, type ParsedArgs, stringFlag, UsageError } from "../args.ts";
import { EventsResult, TaskResult } from "../mcp/agent/schemas.ts";
import { paint, printJson, printJsonLine, printLine, runCommand, type Style, table, writeStdout } from "./output.ts";

type Task = v.InferOutput<typeof TaskResult>;
type TaskEvent = v.InferOutput<typeof EventsResult>["events"][number];

const TaskListResult = v.looseObject({ tasks: v.array(TaskResult), next_before_task_id: v.nullable(v.string()) });

/** How long one `tail` long poll waits, below the Bridge's `max_wait_ms` (limits.ts). */
const TAIL_WAIT_MS = 20_000;
/** How much of a final response `show` prints; the whole text is the MCP client's to read. */
const PREVIEW_BYTES = 1024;
/** How much of one payload value an event line shows. */
const VALUE_CHARS = 80;
/** How much of an event's text (an agent's message) its line shows. */
const TEXT_CHARS = 160;

const STATUS_STYLE: Partial<Record<string, Style>> = {
  succeeded: "green",
  failed: "red",
  interrupted: "red",
  cancelled: "yellow",
  waiting_for_approval: "yellow",
  waiting_for_question: "yellow",
};
const status = (s: string) => {
  const style = STATUS_STYLE[s];
  return style ? paint(style, s) : s;
};

const TASKS_SUBCOMMANDS = ["list", "show", "events", "tail"];

export async function runTasks(args: ParsedArgs, configPath: string | undefined): Promise<number> {
  const [, sub, taskId, ...extra] = args.command;
  if (extra.length > 0) throw new UsageError("tasks takes at most one task id", "tasks");
  const json = booleanFlag(args, "--json");
  const wantsId = sub === "show" || sub === "events" || sub === "tail";
  if (sub === "list" && taskId !== undefined) throw new UsageError("tasks list takes no task id", "tasks");
  if (wantsId && taskId === undefined) throw new UsageError(`tasks ${sub} needs a task id`, "tasks");
  if (!wantsId && sub !== "list")
    throw new UsageError(
      sub === undefined ? "tasks needs list, show, events or tail" : `unknown tasks command ${sub}${suggestion(sub, TASKS_SUBCOMMANDS)}`,
      "tasks",
    );

  const limit = intFlag(args, "--limit", 1, sub === "list" ? LIMITS.max_task_page : LIMITS.max_event_page, "tasks");
  const after = intFlag(args, "--after", 0, Number.MAX_SAFE_INTEGER, "tasks") ?? 0;
  const statusFilter = stringFlag(args, "--status");
  if (statusFilter !== undefined && !(TASK_STATUSES as readonly string[]).includes(statusFilter)) {
    throw new UsageError(`--status must be one of ${TASK_STATUSES.join(", ")}`, "tasks");
  }
  const client = BridgeClient.fromConfig(loadConfig({ role: "operator", configPath }));
  return runCommand(async () => {
    if (sub === "list") return list(client, statusFilter ?? null, limit, json);
    const id = taskId!;
    if (sub === "show") return show(client, id, json);
    if (sub === "events") return events(client, id, after, limit, json);
    return tail(client, id, after, json);
  });
}

// ----- the Bridge calls -----

const getTask = (client: BridgeClient, taskId: string) => client.call("task.get", { task_id: taskId }, { result: TaskResult });

function eventsPage(client: BridgeClient, taskId: string, after: number, limit: number, waitMs = 0) {
  return client.call("task.events", { task_id: taskId, after_event_id: after, limit, wait_ms: waitMs }, { result: EventsResult, extraTimeoutMs: waitMs });
}

/** A task as `list` shows it: everything but the final response (only `show` previews that). */
function withoutResponse(task: Task): Omit<Task, "final_response"> {
  const { final_response: _, ...rest } = task;
  return rest;
}

// ----- list -----

/**
 * Up to `limit` tasks, newest first. One answer must fit in 1 MiB (docs/bridge-rpc.md#envelope) while each task
 * carries its final response (up to 256 KiB inline), so a page the Bridge finds too large is asked
 * for again in halves, following `before_task_id`; a single task always fits.
 */
async function listTasks(client: BridgeClient, statusFilter: string | null, limit: number) {
  const tasks: Task[] = [];
  let before: string | null = null;
  let pageSize = limit;
  for (;;) {
    const params = { status: statusFilter, limit: Math.min(pageSize, limit - tasks.length), before_task_id: before };
    let page: v.InferOutput<typeof TaskListResult>;
    try {
      page = await client.call("task.list", params, { result: TaskListResult });
    } catch (e) {
      if (!(isServerFsError(e) && e.code === "RESPONSE_TOO_LARGE" && pageSize > 1)) throw e;
      pageSize = Math.ceil(pageSize / 2);
      continue;
    }
    tasks.push(...page.tasks);
    before = page.next_before_task_id;
    if (before === null || tasks.length >= limit) return { tasks, next_before_task_id: before };
  }
}

async function list(client: BridgeClient, statusFilter: string | null, limit: number | undefined, json: boolean): Promise<number> {
  const page = await listTasks(client, statusFilter, limit ?? LIMITS.default_page);
  if (json) {
    printJson({ tasks: page.tasks.map(withoutResponse), next_before_task_id: page.next_before_task_id });
    return 0;
  }
  if (page.tasks.length === 0) {
    printLine("no tasks");
    return 0;
  }
  const rows = page.tasks.map((t) => [t.task_id, status(t.status), t.runtime, t.workdir_alias, t.profile, t.created_at, t.error_code ?? ""]);
  for (const line of table(rows, ["TASK", "STATUS", "RUNTIME", "WORKDIR", "PROFILE", "CREATED", "ERROR"])) printLine(line);
  if (page.next_before_task_id !== null) printLine(paint("dim", `(older tasks not shown; --limit goes up to ${LIMITS.max_task_page})`));
  return 0;
}

// ----- show -----

function preview(task: Task): { text: string; cut: boolean } | null {
  if (task.final_response === null) return null;
  const { text, truncated } = cutUtf8(task.final_response, PREVIEW_BYTES);
  // a spooled result's final_response is already the Bridge's own preview of a longer text
  return { text, cut: truncated || task.final_response_truncated };
}

/** What is true of the result in each state: never a bare "none yet" for a task that has ended. */
function resultSummary(task: Task): string {
  const r = task.result;
  if (r.size_bytes !== null) {
    const where = r.storage === "inline" ? "inline" : r.retrievable ? "spooled, retrievable with read_agent_task_result" : "spooled, no longer retrievable";
    return `${where}, ${r.size_bytes} bytes, sha256 ${r.sha256 ?? "unknown"}`;
  }
  const why = task.error_code === null ? "" : ` (${task.error_code})`;
  switch (task.status) {
    case "succeeded":
      return task.manifest_sha256 === null
        ? "none recorded (a task migrated from v0.6, which kept no result)"
        : "none (the agent ended without a final response)";
    case "failed":
      return `none: the task failed${why}`;
    case "cancelled":
      return "none: the task was cancelled before a final response";
    case "interrupted":
      return `none: the task was interrupted${why}`;
    default:
      return "none yet: the task has not ended";
  }
}

function pendingSummary(task: Task): string | null {
  const p = task.pending_request;
  if (p === null) return task.pending_request_id;
  const payload = p.payload as Record<string, unknown>;
  const text = (key: string) => (typeof payload[key] === "string" ? (payload[key] as string) : null);
  const command = text("command_display");
  const what =
    p.kind === "approval"
      ? `${[text("category"), text("title")].filter((x) => x !== null).join(": ")}${command === null ? "" : ` [${command}]`}`
      : `${Array.isArray(payload["questions"]) ? payload["questions"].length : 0} question(s)`;
  return `${p.kind} ${p.request_id} (${p.status}, expires ${p.expires_at ?? "never"}) ${what}`.trimEnd();
}

async function show(client: BridgeClient, taskId: string, json: boolean): Promise<number> {
  const task = await getTask(client, taskId);
  const response = preview(task);
  if (json) {
    // the task object as task.get has it, but the final response only as the preview
    printJson({ ...task, final_response: response?.text ?? null, final_response_preview_cut: response?.cut ?? false });
    return 0;
  }
  const fields: [string, string | null][] = [
    ["task", task.task_id],
    ["status", status(task.status)],
    ["runtime", task.runtime],
    ["workdir", `${task.workdir_alias} (slot ${task.workdir_slot}), start directory ${task.relative_cwd === "" ? "." : task.relative_cwd}`],
    ["profile", task.profile],
    ["created", task.created_at],
    ["started", task.started_at],
    ["updated", task.updated_at],
    ["completed", task.completed_at],
    ["deadline", task.deadline_at],
    ["continues", task.continue_from_task_id],
    ["correlation", task.correlation_id],
    ["idempotency", task.idempotency_key],
    ["error", task.error_code === null ? null : `${task.error_code}: ${task.error_message ?? ""}`.trimEnd()],
    ["result", resultSummary(task)],
    ["pending", pendingSummary(task)],
    ["manifest", task.manifest_sha256 === null ? "none (migrated task)" : `sha256 ${task.manifest_sha256}`],
  ];
  const rows = fields.filter((f): f is [string, string] => f[1] !== null);
  for (const line of table(rows)) printLine(line);
  if (response !== null) {
    printLine("response");
    for (const line of response.text.split("\n")) printLine(`  ${line}`);
    if (response.cut) printLine(paint("dim", `  … (preview; the whole result is ${task.result.size_bytes ?? "?"} bytes)`));
  }
  return 0;
}

// ----- events and tail -----

function valueText(value: unknown): string {
  const text = typeof value === "string" && /^[\w.:/@+-]+$/.test(value) ? value : JSON.stringify(value);
  return text.length > VALUE_CHARS ? `${text.slice(0, VALUE_CHARS - 1)}…` : text;
}

/**
 * What an event says, on one line: its text where it has one (an agent's message, a tool's output),
 * quoted and cut, then the other payload fields as short `key=value` pairs.
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
const eventsHeader = () => paint("bold", `${COLUMNS.map(([h, w]) => h.padEnd(w)).join("  ")}  DETAIL`);
const eventLine = (n: number, e: TaskEvent) =>
  `${[`#${n}`, String(e.event_id), e.created_at, e.event_type].map((cell, i) => cell.padEnd(COLUMNS[i]![1])).join("  ")}  ${eventDetail(e.payload as Record<string, unknown>)}`.trimEnd();

/** How many of the task's events come at or before the global id `after` (so `#n` stays the task's own count). */
async function countThrough(client: BridgeClient, taskId: string, after: number): Promise<number> {
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

async function events(client: BridgeClient, taskId: string, after: number, limit: number | undefined, json: boolean): Promise<number> {
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

/** A line shown only on a terminal while nothing arrives, erased by the next line. */
const WAITING = (s: string) => `\r\x1b[K${paint("dim", `… waiting for events (the task is ${s})`)}`;
const ERASE = "\r\x1b[K";

async function tail(client: BridgeClient, taskId: string, after: number, json: boolean): Promise<number> {
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
