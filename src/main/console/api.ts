/**
 * What the console's page reads and decides (docs/console.md#the-api), each through the Bridge's socket
 * like `serverfs tasks`: the task list, one task, its events (the Bridge's long poll), the workdirs'
 * state, the `doctor` checks, and the three decisions with the actor `operator` — the same calls as the
 * MCP tools, so a lost race is the same `REQUEST_STALE`. Offers `ConsoleApi`.
 */
import * as v from "valibot";
import type { BridgeClient } from "../../shared/bridge-protocol/client.ts";
import type { Result, TaskObjectResult as Task } from "../../shared/bridge-protocol/results.ts";
import type { Config } from "../../shared/config/load.ts";
import { ServerFsError } from "../../shared/errors.ts";
import { LIMITS } from "../../shared/limits.ts";
import { isTerminal } from "../../shared/store/task-states.ts";
import { cutUtf8 } from "../../shared/utf8.ts";
import { doctorChecks } from "../operator/doctor.ts";

/** How many tasks the list shows: the newest page the Bridge gives without paging. */
const LIST_LIMIT = 100;
/** How much of a final response the page shows; the whole text is the MCP client's to read. */
const PREVIEW_BYTES = 4096;
/** The page's long poll, below the Bridge's `wait_ms` bound. */
const MAX_WAIT_MS = 20_000;

export const DecisionBody = v.strictObject({ request_id: v.string(), decision: v.string() });
export const AnswerBody = v.strictObject({ request_id: v.string(), answers: v.array(v.unknown()) });

/**
 * A task without its final response and manifest (the list; one task adds a short preview), but with
 * the manifest's `choices` (the model it was given), where the Bridge records them.
 */
function listed(task: Task) {
  const { final_response: _, manifest, ...rest } = task;
  const choices = manifest !== null && typeof manifest["choices"] === "object" ? manifest["choices"] : null;
  return { ...rest, choices };
}

export class ConsoleApi {
  constructor(
    private readonly client: BridgeClient,
    private readonly config: Config,
  ) {}

  /** The newest tasks; a page the Bridge finds too large (big inline results) is asked for in smaller pieces. */
  async tasks(status: string | null) {
    const tasks: ReturnType<typeof listed>[] = [];
    let before: string | null = null;
    let size = LIST_LIMIT;
    while (tasks.length < LIST_LIMIT) {
      let page: Result<"task.list">;
      try {
        page = await this.client.call("task.list", { status, limit: Math.min(size, LIST_LIMIT - tasks.length), before_task_id: before });
      } catch (e) {
        if (!(e instanceof ServerFsError && e.code === "RESPONSE_TOO_LARGE" && size > 1)) throw e;
        size = Math.ceil(size / 2);
        continue;
      }
      tasks.push(...page.tasks.map(listed));
      before = page.next_before_task_id;
      if (before === null) break;
    }
    return { tasks, more: before !== null };
  }

  async task(taskId: string) {
    const task = await this.client.call("task.get", { task_id: taskId });
    const preview = task.final_response === null ? null : cutUtf8(task.final_response, PREVIEW_BYTES);
    return {
      ...listed(task),
      final_response_preview: preview?.text ?? null,
      final_response_preview_cut: (preview?.truncated ?? false) || task.final_response_truncated,
    };
  }

  events(taskId: string, after: number, waitMs: number) {
    const wait = Math.max(0, Math.min(MAX_WAIT_MS, waitMs));
    return this.client.call("task.events", { task_id: taskId, after_event_id: after, limit: LIMITS.default_page, wait_ms: wait }, { extraTimeoutMs: wait });
  }

  /**
   * Each configured workdir: its mode, the write task that holds its writer lease (the Bridge takes the
   * lease for a live `workspace-write` task of the slot), its active-slot guard, and whether recovery is
   * needed (a guard whose task has ended or is gone: writes to the slot fail closed until it is resolved).
   */
  async workdirs() {
    const [live, guards] = await Promise.all([this.tasks(null), this.client.call("recovery.list", {})]);
    return {
      workdirs: this.config.workdirs.map((w) => {
        const writer = live.tasks.find((t) => t.workdir_slot === w.slot && t.profile === "workspace-write" && !isTerminal(t.status));
        const guard = guards.guards.find((g) => g.slot === w.slot) ?? null;
        const recoveryNeeded = guard !== null && (guard.task_id === null || guard.task_status === null || isTerminal(guard.task_status));
        return {
          slot: w.slot,
          alias: w.alias,
          read_only: w.policy.read_only,
          agent_mode: w.policy.agent_mode,
          writer_task_id: writer?.task_id ?? null,
          guard:
            guard === null ? null : { task_id: guard.task_id, task_status: guard.task_status, created_at: guard.created_at, last_verdict: guard.last_verdict },
          recovery_needed: recoveryNeeded,
        };
      }),
    };
  }

  async health() {
    return { checks: await doctorChecks(this.config) };
  }

  async decide(taskId: string, body: v.InferOutput<typeof DecisionBody>) {
    return this.client.call("task.approval.respond", { task_id: taskId, request_id: body.request_id, decision: body.decision, actor: "operator" });
  }

  async answer(taskId: string, body: v.InferOutput<typeof AnswerBody>) {
    return this.client.call("task.question.answer", { task_id: taskId, request_id: body.request_id, answers: body.answers, actor: "operator" });
  }

  async cancel(taskId: string) {
    return this.client.call("task.cancel", { task_id: taskId, actor: "operator" });
  }
}
