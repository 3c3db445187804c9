/**
 * `serverfs tasks list [--status S] [--limit N] [--json]`: newest first, one row per task, with its
 * model, its tokens (input/output) and cost where the runtime reported them.
 */
import type { BridgeClient } from "../../../shared/bridge-protocol/client.ts";
import type { Result, TaskObjectResult as Task } from "../../../shared/bridge-protocol/results.ts";
import { isServerFsError } from "../../../shared/errors.ts";
import { LIMITS } from "../../../shared/limits.ts";
import { paint, printJson, printLine, table } from "../output.ts";
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
async function listTasks(client: BridgeClient, statusFilter: string | null, limit: number) {
  const tasks: Task[] = [];
  let before: string | null = null;
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

export async function list(client: BridgeClient, statusFilter: string | null, limit: number | undefined, json: boolean): Promise<number> {
  const page = await listTasks(client, statusFilter, limit ?? LIMITS.default_page);
  if (json) {
    printJson({ tasks: page.tasks.map(withoutResponse), next_before_task_id: page.next_before_task_id });
    return 0;
  }
  if (page.tasks.length === 0) {
    printLine("no tasks");
    return 0;
  }
  const rows = page.tasks.map((t) => [
    t.task_id,
    status(t.status),
    t.runtime,
    modelOf(t),
    t.workdir_alias,
    t.profile,
    t.created_at,
    tokensText(t),
    costText(t.usage?.total.cost_usd ?? null),
    t.error_code ?? "",
  ]);
  for (const line of table(rows, ["TASK", "STATUS", "RUNTIME", "MODEL", "WORKDIR", "PROFILE", "CREATED", "TOKENS", "COST", "ERROR"])) printLine(line);
  if (page.next_before_task_id !== null) printLine(paint("dim", `(older tasks not shown; --limit goes up to ${LIMITS.max_task_page})`));
  return 0;
}
