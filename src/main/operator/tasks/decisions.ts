/**
 * `serverfs tasks approve|deny|answer|cancel` (docs/cli.md#deciding-from-the-shell): the operator
 * answers a task's pending request, or cancels the task, from the shell. The pending request is found
 * from the task (`task.get`), then answered through the same Bridge calls as the MCP tools
 * (`task.approval.respond`, `task.question.answer`, `task.cancel`) with the actor `operator`, so the
 * Bridge audits who decided and a lost race is the same `REQUEST_STALE` as any other answer.
 *
 * - `approve ID [--session]`: `approve_once` (`approve_session` with `--session`);
 * - `deny ID`: `deny`;
 * - `answer ID QUESTION_ID=OPTION_ID…`: one pair per chosen option (a multi-select question repeats its id);
 * - `cancel ID`: cancels a task that has not ended.
 *
 * Each prints what it decided (`--json`: one document); one that could not decide throws its code,
 * which cli.ts prints as `serverfs: CODE: message` (exit 1). Offers `DECISION_SUBCOMMANDS`, `runDecision`.
 */
import { BridgeClient } from "../../../shared/bridge-protocol/client.ts";
import type { TaskObjectResult as Task } from "../../../shared/bridge-protocol/results.ts";
import { loadConfig } from "../../../shared/config/load.ts";
import { ServerFsError } from "../../../shared/errors.ts";
import { isTerminal } from "../../../shared/store/task-states.ts";
import { booleanFlag, type ParsedArgs, UsageError } from "../../args.ts";
import { printJson, printLine, runCommand } from "../output.ts";

export const DECISION_SUBCOMMANDS = ["approve", "deny", "answer", "cancel"] as const;
type DecisionSubcommand = (typeof DECISION_SUBCOMMANDS)[number];
export const isDecisionSubcommand = (sub: string | undefined): sub is DecisionSubcommand =>
  (DECISION_SUBCOMMANDS as readonly (string | undefined)[]).includes(sub);

type Answer = { question_id: string; selected_option_ids: string[] };

/** `q1=a q1=b q2=c` → one answer per question, its options in the order given. */
export function parseAnswers(pairs: readonly string[]): Answer[] {
  if (pairs.length === 0) throw new UsageError("tasks answer needs at least one QUESTION_ID=OPTION_ID", "tasks");
  const byQuestion = new Map<string, string[]>();
  for (const pair of pairs) {
    const eq = pair.indexOf("=");
    if (eq <= 0 || eq === pair.length - 1) throw new UsageError(`${JSON.stringify(pair)} is not QUESTION_ID=OPTION_ID`, "tasks");
    const question = pair.slice(0, eq);
    byQuestion.set(question, [...(byQuestion.get(question) ?? []), pair.slice(eq + 1)]);
  }
  return [...byQuestion].map(([question_id, selected_option_ids]) => ({ question_id, selected_option_ids }));
}

export async function runDecision(sub: DecisionSubcommand, args: ParsedArgs, configPath: string | undefined): Promise<number> {
  const [, , taskId, ...rest] = args.command;
  if (taskId === undefined) throw new UsageError(`tasks ${sub} needs a task id`, "tasks");
  if (sub !== "answer" && rest.length > 0) throw new UsageError(`tasks ${sub} takes one task id`, "tasks");
  const session = booleanFlag(args, "--session");
  if (session && sub !== "approve") throw new UsageError("--session goes with tasks approve only", "tasks");
  const answers = sub === "answer" ? parseAnswers(rest) : [];
  const json = booleanFlag(args, "--json");
  const client = BridgeClient.fromConfig(loadConfig({ role: "operator", configPath }));
  return runCommand(async () => {
    if (sub === "cancel") return cancel(client, taskId, json);
    const task = await client.call("task.get", { task_id: taskId });
    const requestId = pendingRequestId(task, sub === "answer" ? "question" : "approval");
    if (sub === "answer") {
      await client.call("task.question.answer", { task_id: taskId, request_id: requestId, answers, actor: "operator" });
      if (json) printJson({ task_id: taskId, request_id: requestId, answers, actor: "operator" });
      else
        printLine(`answered question ${requestId} of task ${taskId}: ${answers.map((a) => `${a.question_id}=${a.selected_option_ids.join(",")}`).join(" ")}`);
      return 0;
    }
    const decision = sub === "deny" ? "deny" : session ? "approve_session" : "approve_once";
    await client.call("task.approval.respond", { task_id: taskId, request_id: requestId, decision, actor: "operator" });
    if (json) printJson({ task_id: taskId, request_id: requestId, decision, actor: "operator" });
    else printLine(`${decision} for approval ${requestId} of task ${taskId}`);
    return 0;
  });
}

/** The id of the task's open request of this kind, or the reason there is none to answer. */
function pendingRequestId(task: Task, kind: "approval" | "question"): string {
  const pending = task.pending_request;
  if (pending === null || pending.status !== "pending") {
    throw new ServerFsError("REQUEST_NOT_FOUND", `task ${task.task_id} has no pending request (it is ${task.status})`);
  }
  if (pending.kind !== kind) {
    const how = pending.kind === "question" ? "answer it with `serverfs tasks answer`" : "decide it with `serverfs tasks approve` or `deny`";
    throw new ServerFsError(
      kind === "approval" ? "INVALID_APPROVAL_DECISION" : "INVALID_QUESTION_ANSWER",
      `task ${task.task_id} waits for a ${pending.kind}, not an ${kind === "approval" ? "approval" : "answer"}; ${how}`,
    );
  }
  return pending.request_id;
}

const alreadyEnded = (taskId: string, status: string) =>
  new ServerFsError("AGENT_TASK_TERMINAL", `task ${taskId} had already ended (${status}); nothing was cancelled`);

async function cancel(client: BridgeClient, taskId: string, json: boolean): Promise<number> {
  // task.cancel is idempotent and answers an ended task with its status: the operator is told that
  // nothing was cancelled, also when another ending won the race
  const before = await client.call("task.get", { task_id: taskId });
  if (isTerminal(before.status)) throw alreadyEnded(taskId, before.status);
  const answer = await client.call("task.cancel", { task_id: taskId, actor: "operator" });
  if (answer.status !== "cancelled") throw alreadyEnded(taskId, answer.status);
  if (json) printJson({ task_id: taskId, status: answer.status, actor: "operator" });
  else printLine(`cancelled task ${taskId}`);
  return 0;
}
