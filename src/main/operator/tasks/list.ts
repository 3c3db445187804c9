/**
 * `serverfs tasks list [--status S] [--limit N] [--before ID] [--json]`: newest first, one row per task,
 * with its model, its tokens (input/output) and cost where the runtime reported them. A page that
 * leaves older tasks out ends with the command that lists the next one (`--before` the page's last
 * task, the Bridge's `before_task_id` cursor), so any number of tasks can be paged through.
 */
import type { BridgeClient } from "../../../shared/bridge-protocol/client.ts";
import type { Result, TaskObjectResult as Task } from "../../../shared/bridge-protocol/results.ts";
import { isServerFsError } from "../../../shared/errors.ts";
import { LIMITS } from "../../../shared/limits.ts";
import { paint, printJson, printLine, table, visible } from "../output.ts";
import { status } from "./bridge-calls.ts";
import { costText, modelOf, tokensText } from "./usage.ts";

/** A task as `list` shows it: everything but the final response (only `show` previews that). */
function withoutResponse(task: Task): Omit<Task, "final_response"> {
  const { final_response: _, ...rest } = task;
  return rest;
}

/**
 * Up to `limit` tasks, newest first. One answer must fit in 1 MiB (docs/bridge-rpc.md#envelope) while each task
 * carries its final response (up to 256 KiB inline), so a page the Bridge finds too large is asked
 * for again in halves, following `before_task_id`; a single task always fits.
 */
async function listTasks(client: BridgeClient, statusFilter: string | null, limit: number, start: string | null) {
  const tasks: Task[] = [];
  let before = start;
  let pageSize = limit;
  for (;;) {
    const params = { status: statusFilter, limit: Math.min(pageSize, limit - tasks.length), before_task_id: before };
    let page: Result<"task.list">;
    try {
      page = await client.call("task.list", params);
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

export interface ListOptions {
  status: string | null;
  limit: number | undefined;
  /** Only tasks older than this one (exclusive), as a previous page's next command names it. */
  before: string | null;
}

/** The command for the page after this one, with the same filter and page size. */
function nextPageCommand(options: ListOptions, cursor: string): string {
  const status = options.status === null ? "" : ` --status ${options.status}`;
  const limit = options.limit === undefined ? "" : ` --limit ${options.limit}`;
  return `serverfs tasks list${status}${limit} --before ${cursor}`;
}

export async function list(client: BridgeClient, options: ListOptions, json: boolean): Promise<number> {
  const page = await listTasks(client, options.status, options.limit ?? LIMITS.default_page, options.before);
  if (json) {
    printJson({ tasks: page.tasks.map(withoutResponse), next_before_task_id: page.next_before_task_id });
    return 0;
  }
  if (page.tasks.length === 0) {
    printLine(options.before === null ? "no tasks" : `no tasks older than ${options.before}`);
    return 0;
  }
  const rows = page.tasks.map((t) => [
    t.task_id,
    status(t.status),
    t.runtime,
    visible(modelOf(t)),
    t.workdir_alias,
    t.profile,
    t.created_at,
    tokensText(t),
    costText(t.usage?.total.cost_usd ?? null),
    t.error_code ?? "",
  ]);
  for (const line of table(rows, ["TASK", "STATUS", "RUNTIME", "MODEL", "WORKDIR", "PROFILE", "CREATED", "TOKENS", "COST", "ERROR"])) printLine(line);
  if (page.next_before_task_id !== null) printLine(paint("dim", `(older tasks: ${nextPageCommand(options, page.next_before_task_id)})`));
  return 0;
}
