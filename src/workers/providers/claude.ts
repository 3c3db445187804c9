/**
 * The adapter for the real Claude Code CLI (docs/runtimes.md#claude): `claude -p` speaking stream-json on
 * stdio, with permission prompts routed to this adapter (`--permission-prompt-tool stdio`) and from
 * there to the Bridge's humans.
 *
 * Offers: `createClaudeAdapter(settings)` → `RuntimeAdapter` named "claude", from `[runtimes.claude]`
 * (`bin`, `config_dir` → CLAUDE_CONFIG_DIR when set, `probe_timeout_seconds`, `models` → its model
 * listing); `CLAUDE_EFFORTS`; type `ClaudeSettings`. A task's model, effort and budget become
 * `--model`, `--effort`, `--max-budget-usd`; the result's `modelUsage` becomes `task.usage` events, and
 * a run stopped by its budget ends with AGENT_BUDGET_EXCEEDED.
 *
 * Run order: spawn (its own group) → `recordNative({pgid, startTime})` awaited → the `initialize`
 * control request (the hook that reports each Bash call's directory) → the prompt line →
 * `started()` → events, prompts and the session id as they come → one outcome at the `result` line.
 * Claude has no live steering; a continuation passes `--resume <session>`. The stream is read to its
 * end, so the CLI never blocks on a full pipe; a malformed or oversized line ends the run with
 * AGENT_PROVIDER_ERROR.
 */
import { expandHome } from "../../shared/config/load.ts";
import { CLAUDE_DEFAULT_MODELS, type ConfigFile } from "../../shared/config/schema.ts";
import { ServerFsError } from "../../shared/errors.ts";
import { cutUtf8 } from "../../shared/utf8.ts";
import { failed, failedFrom, SettleOnce, startRun, textPayload } from "./adapter-kit.ts";
import { approvalAnswer, approvalFor, DENIED, editedPaths, isEditTool, isQuestionTool, questionAnswer, questionFor } from "./claude-hitl.ts";
import {
  asHookCallback,
  asToolUse,
  type ClaudeLine,
  ClaudeLineSchema,
  controlError,
  controlResponse,
  initializeLine,
  interruptLine,
  isTextBlock,
  isToolRequest,
  isToolResult,
  type PermissionResponse,
  type ToolRequest,
  toolResultText,
  usageOf,
  userLine,
} from "./claude-wire.ts";
import { parseLine } from "./fake-wire.ts";
import type { ProviderProcess } from "./spawn.ts";
import type { Outcome, RunContext, RuntimeAdapter } from "./types.ts";
import { probeVersion } from "./version-probe.ts";

/** `[runtimes.claude]` as the adapter uses it; `models` left out means the default set. */
export type ClaudeSettings = Pick<ConfigFile["runtimes"]["claude"], "bin" | "config_dir" | "probe_timeout_seconds"> &
  Partial<Pick<ConfigFile["runtimes"]["claude"], "models">>;

/** The efforts `claude --effort` takes; the CLI takes each for every model it runs. */
export const CLAUDE_EFFORTS = ["low", "medium", "high", "xhigh", "max"];

/** The result subtype of a run stopped by `--max-budget-usd`. */
const BUDGET_EXHAUSTED = "error_max_budget_usd";

/** The CLI flags of a task's choices (docs/runtimes.md#models-effort-and-budget). */
function choiceArgs(c: RunContext["choices"]): string[] {
  return [
    ...(c.model !== null ? ["--model", c.model] : []),
    ...(c.effort !== null ? ["--effort", c.effort] : []),
    ...(c.max_budget_usd !== null ? ["--max-budget-usd", String(c.max_budget_usd)] : []),
  ];
}

const ARGS = ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--permission-prompt-tool", "stdio"];

/**
 * The hook that tells where each Bash call runs: Claude Code keeps one shell directory for the session
 * (a `cd` moves it) and gives it as `cwd` to a PreToolUse hook, which fires before the permission prompt.
 */
const SHELL_CWD_HOOK = "serverfs-shell-cwd";
const HOOKS = { PreToolUse: [{ matcher: "Bash", hookCallbackIds: [SHELL_CWD_HOOK] }] };

/** A failed tool's own reason (e.g. Claude's "Blocked: …"), bounded; the event is redacted downstream. */
const TOOL_ERROR_BYTES = 4096;

/** Claude wraps a tool's refusal in markup meant for the model; a human reads the text inside. */
const TOOL_USE_ERROR = /^<tool_use_error>([\s\S]*)<\/tool_use_error>$/;

function toolCompleted(tool: string, isError: boolean, content: unknown): Record<string, unknown> {
  if (!isError) return { tool, is_error: false };
  const text = toolResultText(content).trim();
  const cut = cutUtf8(TOOL_USE_ERROR.exec(text)?.[1] ?? text, TOOL_ERROR_BYTES);
  return cut.truncated ? { tool, is_error: true, error: cut.text, truncated: true } : { tool, is_error: true, error: cut.text };
}

/** One run of `claude -p`: the state between the CLI process and the caller. */
class ClaudeRun {
  private readonly result = new SettleOnce<Outcome>();
  readonly outcome = this.result.promise;
  private cancelRequested = false;
  private sawInit = false;
  /** tool_use id → tool name, so results report the tool without leaking the provider's id. */
  private readonly tools = new Map<string, string>();
  /** The control request now with the human, if any. */
  private pendingRequestId: string | null = null;
  /** Bash calls the CLI is about to run or runs (tool_use id → the shell's directory as the hook gave it). */
  private readonly shellCwds = new Map<string, string | null>();

  constructor(
    private readonly proc: ProviderProcess,
    private readonly ctx: RunContext,
  ) {}

  async drive(): Promise<void> {
    try {
      // a rejection ends the run with its code, before the CLI has its task input
      await this.ctx.recordNative({ pgid: this.proc.pgid, startTime: this.proc.startTime });
      if (this.cancelRequested) {
        this.result.settle({ kind: "cancelled" });
        return;
      }
      this.proc.send(initializeLine(`serverfs-init-${this.ctx.taskId}`, HOOKS));
      this.proc.send(userLine(this.ctx.prompt));
      this.ctx.started();
      for await (const raw of this.proc.lines) {
        const line = parseLine(ClaudeLineSchema, raw);
        if (line === null) throw new ServerFsError("AGENT_PROVIDER_ERROR", "the agent runtime sent a malformed line");
        await this.handle(line);
      }
      this.result.settle(this.endedEarly());
    } catch (e) {
      this.result.settle(failedFrom(e));
    } finally {
      await this.proc.lines.return(undefined);
      this.proc.closeStdin();
    }
  }

  private endedEarly(): Outcome {
    if (this.cancelRequested) return { kind: "cancelled" };
    return this.notResumed() ?? failed("AGENT_PROVIDER_ERROR", "the agent runtime ended before an outcome", this.proc.stderrTail());
  }

  /** `--resume` of a session the CLI does not have fails before its init line (an error result, then exit). */
  private notResumed(): Outcome | null {
    if (this.sawInit || this.ctx.continueNativeSessionId === null) return null;
    return failed("AGENT_SESSION_NOT_RESUMABLE", "the agent session could not be resumed");
  }

  private async handle(line: ClaudeLine): Promise<void> {
    if (this.result.settled) return;
    switch (line.type) {
      case "system":
        if (line.subtype === "init" && line.session_id !== undefined) {
          this.sawInit = true;
          await this.ctx.recordNative({ sessionId: line.session_id });
        }
        return;
      case "assistant":
        for (const block of line.message.content) {
          const toolUse = asToolUse(block);
          if (isTextBlock(block)) this.ctx.emit("agent.message", textPayload("text", block.text));
          else if (toolUse !== null) this.toolStarted(toolUse.id, toolUse.name, toolUse.input);
        }
        return;
      case "user":
        if (typeof line.message.content === "string") return;
        for (const block of line.message.content) {
          if (!isToolResult(block)) continue;
          this.shellCwds.delete(block.tool_use_id);
          const tool = this.tools.get(block.tool_use_id);
          if (tool === undefined) continue;
          this.tools.delete(block.tool_use_id);
          this.ctx.emit("tool.completed", toolCompleted(tool, block.is_error === true, block.content));
        }
        return;
      case "result":
        // before the outcome, so the usage is committed with the run's last batch
        for (const usage of usageOf(line.modelUsage)) this.ctx.emit("task.usage", { ...usage });
        if (this.cancelRequested) this.result.settle({ kind: "cancelled" });
        else if (line.is_error && line.subtype === BUDGET_EXHAUSTED) this.result.settle(failed("AGENT_BUDGET_EXCEEDED", "the run reached its max_budget_usd"));
        else if (line.is_error) this.result.settle(this.notResumed() ?? failed("AGENT_PROVIDER_ERROR", line.result || "the agent runtime reported an error"));
        else this.result.settle({ kind: "final", text: line.result ?? "" });
        // one turn per run: closing the input lets the CLI exit
        this.proc.closeStdin();
        return;
      case "control_request": {
        const hook = asHookCallback(line.request);
        if (isToolRequest(line.request)) this.permission(line.request_id, line.request);
        else if (hook?.callback_id === SHELL_CWD_HOOK && hook.input.tool_use_id !== undefined) {
          this.shellCwds.set(hook.input.tool_use_id, hook.input.cwd ?? null);
          this.proc.send(controlResponse(line.request_id, {}));
        } else this.proc.send(controlError(line.request_id, "unsupported request"));
        return;
      }
      case "control_cancel_request":
        if (this.pendingRequestId === line.request_id) {
          this.pendingRequestId = null;
          this.ctx.abandonInteraction();
        }
        return;
      default:
        return;
    }
  }

  private toolStarted(id: string, name: string, input: Record<string, unknown>): void {
    this.tools.set(id, name);
    const command = input["command"];
    if (name === "Bash" && typeof command === "string") this.ctx.emit("command.started", textPayload("command", command));
    else if (isEditTool(name)) this.ctx.emit("file_change.started", { tool: name, paths: editedPaths(input) });
    else this.ctx.emit("tool.started", { tool: name });
  }

  /**
   * Where a Bash call runs, as far as it is certain: the directory its PreToolUse hook gave, unless no
   * hook said so or another Bash call is running too (whose `cd` could move the shell first): null.
   */
  private shellCwd(request: ToolRequest): string | null {
    const id = request.tool_use_id;
    if (id === undefined) return null;
    for (const other of this.shellCwds.keys()) if (other !== id) return null;
    return this.shellCwds.get(id) ?? null;
  }

  /** Answered without blocking the stream; a request that cannot reach a human is a denial. */
  private permission(requestId: string, request: ToolRequest): void {
    const answer = (response: PermissionResponse): void => {
      if (this.pendingRequestId === requestId) this.pendingRequestId = null;
      this.proc.send(controlResponse(requestId, response));
    };
    this.pendingRequestId = requestId;
    if (isQuestionTool(request.tool_name)) {
      const question = questionFor(request);
      if (question === null) answer(DENIED);
      else {
        void this.ctx.askQuestion(question).then(
          (r) => answer(questionAnswer(request, r)),
          () => answer(DENIED),
        );
      }
      return;
    }
    void this.ctx.requestApproval(approvalFor(request, this.ctx.cwd, this.shellCwd(request))).then(
      (r) => {
        // the deny carries `interrupt`: the turn ends as a cancellation, not as a provider error
        if (r.decision === "cancel_task") this.cancelRequested = true;
        answer(approvalAnswer(request, r));
      },
      () => answer(DENIED),
    );
  }

  cancel(): void {
    if (!this.cancelRequested) this.proc.send(interruptLine(`serverfs-interrupt-${this.ctx.taskId}`));
    this.cancelRequested = true;
    this.proc.closeStdin();
  }
}

const noSteering = (): Promise<void> => Promise.reject(new ServerFsError("AGENT_PROVIDER_ERROR", "live steering is not supported by this runtime"));

export function createClaudeAdapter(settings: ClaudeSettings): RuntimeAdapter {
  const bin = expandHome(settings.bin);
  const withConfigDir = (env: Readonly<Record<string, string | undefined>>): Record<string, string | undefined> =>
    settings.config_dir ? { ...env, CLAUDE_CONFIG_DIR: expandHome(settings.config_dir) } : { ...env };
  return {
    name: "claude",
    async probe() {
      const { available, version } = await probeVersion([bin, "--version"], withConfigDir(process.env), settings.probe_timeout_seconds * 1000);
      return {
        name: "claude",
        available,
        version,
        persistent_session: true,
        live_steer: false,
        interactive_approval: true,
        interactive_question: true,
        in_flight_recovery: "session-resume",
      };
    },
    async listModels() {
      const models = settings.models ?? CLAUDE_DEFAULT_MODELS;
      return models.map((model, i) => ({ model, efforts: [...CLAUDE_EFFORTS], default_effort: null, is_default: i === 0 }));
    },
    onlyListedModels: true,
    start(ctx) {
      const resume = ctx.continueNativeSessionId !== null ? ["--resume", ctx.continueNativeSessionId] : [];
      return startRun(
        ctx,
        { command: [bin, ...ARGS, ...choiceArgs(ctx.choices), ...resume], env: withConfigDir(ctx.env) },
        (proc) => new ClaudeRun(proc, ctx),
        noSteering,
      );
    },
  };
}
