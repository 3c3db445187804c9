/**
 * MCP Tasks as the extension `io.modelcontextprotocol/tasks` of revision 2026-07-28
 * (docs/mcp-tasks.md#the-2026-07-28-extension; SEP-2663): a request that declares the extension in
 * its own `_meta` client capabilities gets submit_agent_task's Bridge task as a `CreateTaskResult`,
 * and tasks/get, tasks/update and tasks/cancel follow it. The task id is the ServerFS `task_id` and
 * every answer is read from the Bridge when it is asked for, so any `serverfs mcp`, a restarted one
 * included, answers alike. A pending approval or question is the task's `inputRequests`, one form
 * keyed by the Bridge's `request_id` (pending-form.ts), and an accepted `inputResponses` entry goes
 * through the same Bridge call as respond_agent_approval / answer_agent_question.
 */
import { CLIENT_CAPABILITIES_META_KEY, MissingRequiredClientCapabilityError, type Server, type ServerContext } from "@modelcontextprotocol/server";
import * as v from "valibot";
import { isTaskId } from "../../../shared/ids.ts";
import type { AgentDeps } from "../agent/agent-tool.ts";
import type { Json, PendingRequest } from "../agent/elicitation/form-kit.ts";
import { inputRequestsOf, settleReply } from "../agent/elicitation/input-requests.ts";
import { openRequest } from "../agent/elicitation/pending-form.ts";
import { BridgeTaskStore } from "./bridge-task-store.ts";
import { type BridgeTask, MCP_TASK_STATUS, POLL_INTERVAL_MS, statusMessage } from "./mcp-task.ts";
import { notATaskId, rpcError } from "./rpc-error.ts";
import type { ToolOutcome, ToolResult } from "./tool-outcome.ts";

export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";
const REQUIRED = { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } };

/** The part of a request's client capabilities read here (the SDK has already checked the envelope's shape). */
const Envelope = v.looseObject({
  [CLIENT_CAPABILITIES_META_KEY]: v.optional(
    v.looseObject({
      extensions: v.optional(v.record(v.string(), v.unknown())),
      elicitation: v.optional(v.looseObject({ form: v.optional(v.unknown()), url: v.optional(v.unknown()) })),
    }),
  ),
});
const capabilitiesOf = (ctx: ServerContext) => v.parse(Envelope, ctx.mcpReq.envelope ?? {})[CLIENT_CAPABILITIES_META_KEY];

/** Whether this request declares the extension: only then may it get a task (SEP-2663, capability negotiation). */
export function declaresTasks(ctx: ServerContext): boolean {
  return capabilitiesOf(ctx)?.extensions?.[TASKS_EXTENSION] !== undefined;
}

/** Form elicitation, as `askerFor` reads it of a 2025 session: `form` offered, or neither mode named. */
function offersForms(ctx: ServerContext): boolean {
  const e = capabilitiesOf(ctx)?.elicitation;
  return e !== undefined && (e.form !== undefined || e.url === undefined);
}

type Status = "working" | "input_required" | "completed" | "failed" | "cancelled";

/**
 * An agent that failed or was interrupted ended its tools/call as a tool outcome, not a JSON-RPC
 * error, so its task is `completed` with get_agent_task's answer (whose `status` says `failed`);
 * `failed` would be a JSON-RPC error of the call itself (docs/decisions.md).
 */
const STATUS: Record<BridgeTask["status"], Status> = { ...MCP_TASK_STATUS, failed: "completed", interrupted: "completed" };

const TaskParams = v.looseObject({ taskId: v.string() });
/** One `inputResponses` entry as an elicitation answers it; anything else answers no form of ours. */
const ElicitResponse = v.looseObject({ action: v.string(), content: v.optional(v.record(v.string(), v.unknown())) });

export interface ExtTasksOptions {
  deps: AgentDeps;
  /** get_agent_task for this task: a completed task's `result`. */
  finalResult(taskId: string): Promise<ToolResult>;
  signal: AbortSignal;
}

export class ExtTasks {
  private readonly store: BridgeTaskStore;
  private readonly ttlMs: number;

  constructor(private readonly opts: ExtTasksOptions) {
    this.ttlMs = opts.deps.config.bridge.lifecycle.retention_hours * 3_600_000;
    this.store = new BridgeTaskStore({
      bridge: opts.deps.bridge,
      finalResult: opts.finalResult,
      ttlMs: this.ttlMs,
      audit: opts.deps.audit,
      signal: opts.signal,
    });
  }

  /**
   * submit_agent_task for a request that declared the extension: the tool's own checks and
   * `task.submit`, then the task the Bridge has committed as a `CreateTaskResult`. A refusal created
   * no task, so it is the tool's error result, as without the extension. So is a task that could not
   * be read back: the tool result still names it, where a JSON-RPC error would lose a task that exists.
   */
  async call(run: () => Promise<ToolOutcome>): Promise<Record<string, unknown>> {
    const { result, error } = await run();
    if (error !== null) return result;
    const taskId = (result.structuredContent as { task_id: string }).task_id;
    try {
      return { resultType: "task", ...this.task(await this.store.read(taskId)) };
    } catch {
      return result;
    }
  }

  serve(server: Server): void {
    server.setRequestHandler("tasks/get", { params: TaskParams }, async ({ taskId }, ctx) => {
      requireExtension(ctx);
      try {
        return await this.detailed(await this.store.read(taskId, this.signalOf(ctx)), ctx);
      } catch (e) {
        throw rpcError(e);
      }
    });
    // `inputResponses` is a reserved request field: the SDK lifts it off the params into ctx.mcpReq
    server.setRequestHandler("tasks/update", { params: TaskParams }, async ({ taskId }, ctx) => {
      requireExtension(ctx);
      try {
        const pending = openRequest(await this.store.read(taskId, this.signalOf(ctx)));
        const response = v.safeParse(ElicitResponse, pending ? ctx.mcpReq.inputResponses?.[pending.request_id] : undefined);
        if (pending && response.success) await this.answer(taskId, pending, response.output, this.signalOf(ctx));
      } catch (e) {
        throw rpcError(e);
      }
      return {};
    });
    server.setRequestHandler("tasks/cancel", { params: TaskParams }, async ({ taskId }, ctx) => {
      requireExtension(ctx);
      // task.cancel is idempotent: an ended task is answered as it is, so the ack is too
      if (!isTaskId(taskId)) throw notATaskId();
      await this.store.cancel(taskId);
      return {};
    });
  }

  private signalOf(ctx: ServerContext): AbortSignal {
    return AbortSignal.any([ctx.mcpReq.signal, this.opts.signal]);
  }

  /** The fields every task answer carries (SEP-2663 `Task`). */
  private task(task: BridgeTask) {
    return {
      taskId: task.task_id,
      status: STATUS[task.status],
      statusMessage: statusMessage(task),
      createdAt: task.created_at,
      lastUpdatedAt: task.updated_at,
      ttlMs: this.ttlMs,
      pollIntervalMs: POLL_INTERVAL_MS,
    };
  }

  /**
   * tasks/get's `DetailedTask`: a waiting task's open request as its one input request (none when
   * the request's client offers no form elicitation or `[server] elicitation` is off: it answers with
   * respond_agent_approval or answer_agent_question), a completed task's get_agent_task answer.
   */
  private async detailed(task: BridgeTask, ctx: ServerContext): Promise<Record<string, unknown>> {
    const base = this.task(task);
    // the result as the tools/call would have answered it on this revision, its resultType included
    if (base.status === "completed") return { ...base, result: { ...(await this.opts.finalResult(task.task_id)), resultType: "complete" } };
    if (base.status !== "input_required") return base;
    const pending = openRequest(task);
    if (!pending) return { ...base, status: "working" };
    if (!this.opts.deps.config.server.elicitation || !offersForms(ctx)) return { ...base, inputRequests: {} };
    return { ...base, inputRequests: inputRequestsOf(task.task_id, task) };
  }

  /** One `inputResponses` entry for the open request: an accepted one is forwarded; each is audited as a form's answer is. */
  private async answer(taskId: string, pending: PendingRequest, response: { action: string; content?: Json | undefined }, signal: AbortSignal) {
    await settleReply(this.opts.deps, signal, taskId, pending, response);
  }
}

/** A tasks method of a request that did not declare the extension: -32021 naming it (SEP-2663). */
function requireExtension(ctx: ServerContext): void {
  if (!declaresTasks(ctx)) throw new MissingRequiredClientCapabilityError(REQUIRED);
}
