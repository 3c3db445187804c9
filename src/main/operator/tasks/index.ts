/**
 * `serverfs tasks list|show|events|tail` (docs/cli.md): the operator's view of the Bridge's tasks,
 * through the RPC socket only (`task.list`, `task.get`, `task.events`; docs/bridge-rpc.md#methods);
 * `approve|deny|answer|cancel` decide from the shell (decisions.ts).
 *
 * - `list [--status S] [--limit N] [--before ID] [--json]`: newest first, one row per task; `--before`
 *   pages on from the last task of the previous page, whose command `list` prints.
 * - `show <task_id> [--json]`: the task object, with the final response only as a short preview.
 * - `events <task_id> [--after N] [--limit N] [--json]`: every event after the cursor, in order.
 * - `tail <task_id> [--after N] [--json]`: follows events live with the long poll until the task
 *   is terminal, then prints its final status; `--json` gives one JSON object per line.
 *
 * The prompt is never stored, so never shown; the final response appears only in `show`'s preview.
 * Nothing here writes to stderr: a coded failure propagates to cli.ts (`serverfs: CODE: message`, exit 1).
 *
 * One file per subcommand: list.ts, show.ts, events.ts, tail.ts, and decisions.ts for the four decisions.
 */
import { BridgeClient } from "../../../shared/bridge-protocol/client.ts";
import { loadConfig } from "../../../shared/config/load.ts";
import { suggestion } from "../../../shared/did-you-mean.ts";
import { TASK_ID_PATTERN } from "../../../shared/ids.ts";
import { LIMITS } from "../../../shared/limits.ts";
import { TASK_STATUSES } from "../../../shared/store/task-states.ts";
import { booleanFlag, intFlag, type ParsedArgs, stringFlag, UsageError } from "../../args.ts";
import { runCommand } from "../output.ts";
import { DECISION_SUBCOMMANDS, isDecisionSubcommand, runDecision } from "./decisions.ts";
import { events } from "./events.ts";
import { list } from "./list.ts";
import { show } from "./show.ts";
import { tail } from "./tail.ts";

const TASKS_SUBCOMMANDS = ["list", "show", "events", "tail", ...DECISION_SUBCOMMANDS];

export async function runTasks(args: ParsedArgs, configPath: string | undefined): Promise<number> {
  const [, sub, taskId, ...extra] = args.command;
  if (isDecisionSubcommand(sub)) return runDecision(sub, args, configPath);
  if (booleanFlag(args, "--session")) throw new UsageError("--session goes with tasks approve only", "tasks");
  if (extra.length > 0) throw new UsageError("tasks takes at most one task id", "tasks");
  const json = booleanFlag(args, "--json");
  const wantsId = sub === "show" || sub === "events" || sub === "tail";
  if (sub === "list" && taskId !== undefined) throw new UsageError("tasks list takes no task id", "tasks");
  if (wantsId && taskId === undefined) throw new UsageError(`tasks ${sub} needs a task id`, "tasks");
  if (!wantsId && sub !== "list")
    throw new UsageError(
      sub === undefined
        ? "tasks needs list, show, events, tail, approve, deny, answer or cancel"
        : `unknown tasks command ${sub}${suggestion(sub, TASKS_SUBCOMMANDS)}`,
      "tasks",
    );

  const limit = intFlag(args, "--limit", 1, sub === "list" ? LIMITS.max_task_page : LIMITS.max_event_page, "tasks");
  const after = intFlag(args, "--after", 0, Number.MAX_SAFE_INTEGER, "tasks") ?? 0;
  const statusFilter = stringFlag(args, "--status");
  if (statusFilter !== undefined && !(TASK_STATUSES as readonly string[]).includes(statusFilter)) {
    throw new UsageError(`--status must be one of ${TASK_STATUSES.join(", ")}`, "tasks");
  }
  const before = stringFlag(args, "--before");
  if (before !== undefined && sub !== "list") throw new UsageError("--before goes with tasks list only", "tasks");
  if (before !== undefined && !TASK_ID_PATTERN.test(before))
    throw new UsageError("--before must be a task id (agt_ followed by 24 lowercase hex digits)", "tasks");
  const client = BridgeClient.fromConfig(loadConfig({ role: "operator", configPath }));
  return runCommand(async () => {
    if (sub === "list") return list(client, { status: statusFilter ?? null, limit, before: before ?? null }, json);
    const id = taskId!;
    if (sub === "show") return show(client, id, json);
    if (sub === "events") return events(client, id, after, limit, json);
    return tail(client, id, after, json);
  });
}
