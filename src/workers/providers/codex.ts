/**
 * The adapter for the real `codex` runtime (docs/runtimes.md#codex,
 * docs/runtimes.md): one `codex app-server` child per run, driven over the JSON-RPC of `codex-rpc.ts`.
 *
 * Offers `createCodexAdapter(settings)` → `RuntimeAdapter` named "codex", from `[runtimes.codex]`:
 * `bin` (PATH lookup when not absolute, `~` expanded), `codex_home` (→ CODEX_HOME), and
 * `request_timeout_seconds` (bounds the probe and every request ServerFS sends), `approval_policy` /
 * `sandbox` (passed on thread/start and thread/resume only when set; a review task always runs with
 * approval policy "never" and sandbox "read-only", without MCP servers, hooks, plugins, apps and the
 * other extensions that act outside the sandbox, and any approval it still asks is declined on its
 * own with an `approval.auto_declined` event), `models` (the operator's narrowing of what `model/list`
 * offers, codex-models.ts). Type `CodexSettings`.
 *
 * Run order: spawn (its own group) → `recordNative({pgid, startTime})` awaited → initialize +
 * initialized (else AGENT_RUNTIME_NOT_READY) → thread/start or thread/resume (the thread id is the
 * native session) → turn/start with the task's model and effort (the turn id) → `started()` → this
 * thread's notifications and requests as they come (token usage → `task.usage`, a reroute →
 * `model.rerouted`) → one outcome at turn/completed. stdin is closed once the outcome is known, which
 * ends the app-server; a malformed or oversized line ends the run with AGENT_PROVIDER_ERROR.
 */

import * as v from "valibot";
import { expandHome } from "../../shared/config/load.ts";
import type { ConfigFile } from "../../shared/config/schema.ts";
import { ServerFsError } from "../../shared/errors.ts";
import { VERSION } from "../../shared/version.ts";
import { autoDeclinedEvent } from "../auto-decline.ts";
import { cutEventText, failed, failedFrom, notActive, runtimeInfo, SettleOnce, startRun, TokenCount } from "./adapter-kit.ts";
import { AgentMessages, type CodexItem, CodexItemSchema, itemPayload, proposedChanges } from "./codex-items.ts";
import { listCodexModels } from "./codex-models.ts";
import { planServerRequest } from "./codex-requests.ts";
import { CodexRpc, type Incoming, parseIncoming, type RequestId, RpcFailure } from "./codex-rpc.ts";
import type { ProviderProcess } from "./spawn.ts";
import type { Outcome, ProposedFileChange, RunContext, RuntimeAdapter, UsagePayload } from "./types.ts";
import { probeVersion } from "./version-probe.ts";

/** `[runtimes.codex]`; `models` (the operator's narrowing) may be left out: then every listed model. */
export type CodexSettings = Omit<ConfigFile["runtimes"]["codex"], "models"> & Partial<Pick<ConfigFile["runtimes"]["codex"], "models">>;

/**
 * Codex features enabled on every thread (`config` of thread/start and thread/resume): without them
 * the model is told `request_user_input` exists only in Plan mode and gets no `request_permissions`.
 */
const THREAD_FEATURES = {
  "features.default_mode_request_user_input": true,
  "features.request_permissions_tool": true,
} as const;

/**
 * What a review thread runs without (`config` of thread/start and thread/resume): every extension of
 * the CLI that acts outside Codex's sandbox, so a review cannot write through it — hooks (commands the
 * user configured), plugins and apps (which bring MCP servers and hooks of their own), computer and
 * browser use, and the notify program. The user's own MCP servers are turned off one by one
 * (`reviewConfig`), as Codex merges an override into its configured table instead of replacing it.
 */
const REVIEW_WITHOUT = {
  "features.hooks": false,
  "features.plugins": false,
  "features.apps": false,
  "features.computer_use": false,
  "features.browser_use": false,
  "features.browser_use_external": false,
  notify: [],
} as const;

/** A human's answer that never comes back to codex is refused with this JSON-RPC code. */
const NO_ANSWER = -32000;

const ThreadResult = v.looseObject({ thread: v.looseObject({ id: v.string() }), model: v.optional(v.string()) });
const TurnResult = v.looseObject({ turn: v.looseObject({ id: v.string() }) });
const TurnCompleted = v.looseObject({
  turn: v.looseObject({
    id: v.string(),
    status: v.string(),
    error: v.optional(v.nullable(v.looseObject({ message: v.optional(v.string()) }))),
  }),
});
const ConfigReadResult = v.looseObject({
  config: v.looseObject({ mcp_servers: v.optional(v.nullable(v.record(v.string(), v.unknown()))) }),
});
const HooksList = v.looseObject({
  data: v.array(
    v.looseObject({
      hooks: v.array(v.looseObject({ enabled: v.optional(v.boolean(), true), trustStatus: v.optional(v.nullable(v.string())) })),
    }),
  ),
});
/** Hooks Codex does not run: one the user never trusted, or one changed since. */
const IDLE_HOOKS = new Set(["untrusted", "modified"]);
const McpStatusPage = v.looseObject({
  data: v.array(v.looseObject({ runtimeStatus: v.optional(v.nullable(v.string())) })),
  nextCursor: v.optional(v.nullable(v.string())),
});
const ItemNotification = v.looseObject({ item: CodexItemSchema });
const TokenUsageUpdated = v.looseObject({
  tokenUsage: v.looseObject({
    last: v.looseObject({ inputTokens: TokenCount, cachedInputTokens: TokenCount, outputTokens: TokenCount, reasoningOutputTokens: TokenCount }),
  }),
});
const ModelRerouted = v.looseObject({ fromModel: v.string(), toModel: v.string(), reason: v.optional(v.string(), "") });
const ErrorNotification = v.looseObject({
  error: v.optional(v.nullable(v.looseObject({ message: v.optional(v.string()) }))),
  willRetry: v.optional(v.boolean(), false),
});

/** Parses a result the protocol promises; anything else is the provider's error. */
function expect<T extends v.GenericSchema>(schema: T, value: unknown, phrase: string): v.InferOutput<T> {
  const r = v.safeParse(schema, value);
  if (!r.success) throw new ServerFsError("AGENT_PROVIDER_ERROR", phrase);
  return r.output;
}

const textInput = (text: string) => [{ type: "text", text, text_elements: [] }];

/** One run of `codex app-server`: the state between its process and the caller. */
class CodexRun {
  private readonly result = new SettleOnce<Outcome>(() => {
    this.openTurnGate();
    this.proc.closeStdin();
  });
  readonly outcome = this.result.promise;
  private readonly rpc: CodexRpc;
  private threadId: string | null = null;
  private turnId: string | null = null;
  /** The model the turn runs: the one asked, else the thread's; a reroute changes it. */
  private model: string | null;
  /** The turn was started and has not ended: steering and interrupts go to it. */
  private running = false;
  private cancelRequested = false;
  private readonly messages = new AgentMessages();
  private readonly changes = new Map<string, ProposedFileChange[]>();
  /** Command items in progress: while any runs, silence is the command's, not a lost provider. */
  private readonly runningCommands = new Set<string>();
  /** Server requests waiting on a human, by their id's JSON (ids are numbers or strings). */
  private readonly withHuman = new Set<string>();
  private openTurnGate!: () => void;
  /** Requests are handed to the human only once the task is running. */
  private readonly turnGate = new Promise<void>((resolve) => {
    this.openTurnGate = resolve;
  });

  constructor(
    private readonly proc: ProviderProcess,
    private readonly ctx: RunContext,
    private readonly settings: CodexSettings,
  ) {
    this.rpc = new CodexRpc(proc, settings.request_timeout_seconds * 1000);
    this.model = ctx.choices.model;
  }

  async drive(): Promise<void> {
    let reading: Promise<void> = Promise.resolve();
    try {
      // a rejection ends the run with its code, before the provider has its task input
      await this.ctx.recordNative({ pgid: this.proc.pgid, startTime: this.proc.startTime });
      reading = this.read();
      await this.step(
        this.rpc.request("initialize", {
          clientInfo: { name: "serverfs-agent-bridge", title: "ServerFS Agent Bridge", version: VERSION },
          capabilities: { experimentalApi: true },
        }),
        "AGENT_RUNTIME_NOT_READY",
        "the agent runtime failed its handshake",
      );
      this.rpc.notify("initialized");
      const threadId = await this.openThread();
      this.threadId = threadId;
      await this.ctx.recordNative({ sessionId: threadId });
      const turn = await this.step(
        this.rpc.request("turn/start", { threadId, input: textInput(this.ctx.prompt), ...this.turnChoices() }),
        "AGENT_PROVIDER_ERROR",
        "the agent runtime refused the turn",
      );
      this.turnId = expect(TurnResult, turn, "the agent runtime sent no turn").turn.id;
      if (this.result.settled) return;
      this.running = true;
      this.ctx.started();
      this.openTurnGate();
      if (this.cancelRequested) this.interrupt();
      await this.ctx.recordNative({ turnId: this.turnId });
      await reading;
      this.result.settle(
        this.cancelRequested ? { kind: "cancelled" } : failed("AGENT_PROVIDER_ERROR", "the agent runtime ended before an outcome", this.proc.stderrTail()),
      );
    } catch (e) {
      this.result.settle(this.cancelRequested ? { kind: "cancelled" } : failedFrom(e));
    } finally {
      this.running = false;
      this.proc.closeStdin();
      await reading;
      this.rpc.close();
    }
  }

  /** The model and effort the task asked for, as turn/start overrides (absent: the thread's own). */
  private turnChoices(): Record<string, string> {
    const { model, effort } = this.ctx.choices;
    return { ...(model !== null ? { model } : {}), ...(effort !== null ? { effort } : {}) };
  }

  /** Awaits one of our requests; a refusal, timeout or closed stream becomes `code`. */
  private async step(request: Promise<unknown>, code: ServerFsError["code"], phrase: string): Promise<unknown> {
    try {
      return await request;
    } catch {
      throw new ServerFsError(code, phrase);
    }
  }

  private async openThread(): Promise<string> {
    // per-thread config overrides, never a config file of ours: the features behind the capabilities
    // runtime.list reports (a question to a human, a permission request), off in Codex's default mode
    // A review runs without the writer lease, so nothing may let it write: with `never` Codex cannot
    // escalate out of the read-only sandbox, whatever [runtimes.codex] says, and the extensions that
    // act outside that sandbox are off (docs/agent-requests.md).
    const review = this.ctx.profile === "review";
    const overrides: Record<string, unknown> = { config: { ...THREAD_FEATURES, ...(review ? await this.reviewConfig() : {}) } };
    const policy = review ? "never" : this.settings.approval_policy;
    if (policy) overrides["approvalPolicy"] = policy;
    const sandbox = review ? "read-only" : this.settings.sandbox;
    if (sandbox) overrides["sandbox"] = sandbox;
    const resumeId = this.ctx.continueNativeSessionId;
    if (resumeId === null) {
      const r = await this.step(
        this.rpc.request("thread/start", { cwd: this.ctx.cwd, ...overrides }),
        "AGENT_PROVIDER_ERROR",
        "the agent runtime refused to start a thread",
      );
      const started = expect(ThreadResult, r, "the agent runtime sent no thread");
      this.model ??= started.model ?? null;
      if (review) await this.checkIsolated(started.thread.id);
      return started.thread.id;
    }
    const r = await this.step(
      this.rpc.request("thread/resume", { threadId: resumeId, cwd: this.ctx.cwd, excludeTurns: true, ...overrides }),
      "AGENT_SESSION_NOT_RESUMABLE",
      "the session cannot be resumed",
    );
    const id = v.safeParse(ThreadResult, r);
    if (!id.success || id.output.thread.id !== resumeId) {
      throw new ServerFsError("AGENT_SESSION_NOT_RESUMABLE", "the session cannot be resumed");
    }
    this.model ??= id.output.model ?? null;
    if (review) await this.checkIsolated(resumeId);
    return resumeId;
  }

  /** The review's overrides: `REVIEW_WITHOUT`, and every MCP server Codex would start in this cwd turned off. */
  private async reviewConfig(): Promise<Record<string, unknown>> {
    const r = await this.step(
      this.rpc.request("config/read", { cwd: this.ctx.cwd }),
      "AGENT_PROVIDER_ERROR",
      "the agent runtime did not show its configuration",
    );
    const servers = Object.keys(expect(ConfigReadResult, r, "the agent runtime sent no configuration").config.mcp_servers ?? {});
    return { ...REVIEW_WITHOUT, mcp_servers: Object.fromEntries(servers.map((name) => [name, { enabled: false }])) };
  }

  /**
   * Fails closed when the review's thread still has an MCP server that is not off (one configured
   * between the read and the start, or brought some other way) or a hook Codex would run: the turn
   * never starts.
   */
  private async checkIsolated(threadId: string): Promise<void> {
    const hooks = await this.step(this.rpc.request("hooks/list", { threadId }), "AGENT_PROVIDER_ERROR", "the agent runtime did not list its hooks");
    const listed = expect(HooksList, hooks, "the agent runtime sent no hook list").data.flatMap((entry) => entry.hooks);
    if (listed.some((hook) => hook.enabled && !IDLE_HOOKS.has(hook.trustStatus ?? ""))) {
      throw new ServerFsError("AGENT_PROVIDER_ERROR", "a review cannot run with a hook on, and one of the runtime's could not be turned off");
    }
    let cursor: string | null = null;
    do {
      const r = await this.step(
        this.rpc.request("mcpServerStatus/list", { threadId, detail: "toolsAndAuthOnly", cursor }),
        "AGENT_PROVIDER_ERROR",
        "the agent runtime did not list its MCP servers",
      );
      const page = expect(McpStatusPage, r, "the agent runtime sent no MCP server list");
      if (page.data.some((server) => server.runtimeStatus !== "disabled")) {
        throw new ServerFsError("AGENT_PROVIDER_ERROR", "a review cannot run with an MCP server on, and one of the runtime's could not be turned off");
      }
      cursor = page.nextCursor ?? null;
    } while (cursor !== null);
  }

  /** Reads the stream to its end, so the provider never blocks on a full pipe. */
  private async read(): Promise<void> {
    try {
      for await (const line of this.proc.lines) {
        const message = parseIncoming(line);
        if (message === null) throw new ServerFsError("AGENT_PROVIDER_ERROR", "the agent runtime sent a malformed line");
        this.handle(message);
      }
    } catch (e) {
      this.result.settle(failedFrom(e));
    } finally {
      this.rpc.close();
    }
  }

  private handle(message: Incoming): void {
    if (message.kind === "response") this.rpc.dispatch(message);
    else if (message.kind === "request") void this.onRequest(message.id, message.method, message.params);
    else this.onNotification(message.method, message.params);
  }

  /** Only this run's thread and turn count; the app-server also reports on itself. */
  private ours(params: Record<string, unknown>): boolean {
    if (this.threadId === null || params["threadId"] !== this.threadId) return false;
    const turnId = params["turnId"];
    // an MCP elicitation's turn is null when Codex could not tie it to one
    return turnId === undefined || turnId === null || this.turnId === null || turnId === this.turnId;
  }

  private onNotification(method: string, params: Record<string, unknown>): void {
    if (this.result.settled || !this.ours(params)) return;
    switch (method) {
      case "turn/started":
        this.ctx.emit("turn.started", {});
        return;
      case "item/started":
      case "item/completed": {
        const p = v.safeParse(ItemNotification, params);
        if (!p.success) return;
        const item: CodexItem = p.output.item;
        if (item.type === "fileChange" && item.id !== undefined) this.changes.set(item.id, proposedChanges(item));
        if (item.type === "commandExecution" && item.id !== undefined) this.commandRunning(item.id, method === "item/started");
        if (method === "item/completed") this.messages.add(item);
        this.ctx.emit(method === "item/started" ? "item.started" : "item.completed", itemPayload(item));
        return;
      }
      case "error": {
        const p = v.safeParse(ErrorNotification, params);
        if (!p.success) return;
        const cut = cutEventText(p.output.error?.message ?? "");
        this.ctx.emit("provider.error", {
          message: cut.text,
          will_retry: p.output.willRetry,
          ...(cut.truncated ? { truncated: true } : {}),
        });
        return;
      }
      case "thread/tokenUsage/updated": {
        // `last` is what the latest model call used, so the events of a turn add up to the turn's usage
        const p = v.safeParse(TokenUsageUpdated, params);
        if (!p.success) return;
        const last = p.output.tokenUsage.last;
        const usage: UsagePayload = {
          model: this.model,
          input_tokens: last.inputTokens,
          cached_input_tokens: last.cachedInputTokens,
          output_tokens: last.outputTokens,
          reasoning_output_tokens: last.reasoningOutputTokens,
          cost_usd: null,
        };
        this.ctx.emit("task.usage", { ...usage });
        return;
      }
      case "model/rerouted": {
        const p = v.safeParse(ModelRerouted, params);
        if (!p.success) return;
        this.model = p.output.toModel;
        this.ctx.emit("model.rerouted", { from_model: p.output.fromModel, to_model: p.output.toModel, reason: p.output.reason });
        return;
      }
      case "serverRequest/resolved": {
        const key = JSON.stringify(params["requestId"]);
        if (this.withHuman.delete(key)) this.ctx.abandonInteraction();
        return;
      }
      case "turn/completed":
        this.onTurnCompleted(params);
        return;
    }
  }

  /** Pauses the idle timer while the first command runs, resumes it when the last one ends. */
  private commandRunning(itemId: string, running: boolean): void {
    const before = this.runningCommands.size;
    if (running) this.runningCommands.add(itemId);
    else this.runningCommands.delete(itemId);
    const after = this.runningCommands.size;
    if (before === 0 && after > 0) this.ctx.busy(true);
    else if (before > 0 && after === 0) this.ctx.busy(false);
  }

  private onTurnCompleted(params: Record<string, unknown>): void {
    const p = v.safeParse(TurnCompleted, params);
    if (!p.success || (this.turnId !== null && p.output.turn.id !== this.turnId)) return;
    this.running = false;
    const { status, error } = p.output.turn;
    if (status === "completed") this.result.settle({ kind: "final", text: this.messages.finalText() });
    else if (status === "interrupted" && this.cancelRequested) this.result.settle({ kind: "cancelled" });
    else if (status === "interrupted") this.result.settle(failed("AGENT_PROVIDER_ERROR", "the agent runtime interrupted the turn"));
    else this.result.settle(failed("AGENT_PROVIDER_ERROR", error?.message || "the agent runtime failed the turn"));
  }

  private async onRequest(id: RequestId, method: string, params: Record<string, unknown>): Promise<void> {
    await this.turnGate;
    if (this.result.settled) return;
    if (!this.ours(params)) return this.rpc.replyError(id, NO_ANSWER, "not a request of this client's turn");
    const plan = planServerRequest(method, params, (itemId) => this.changes.get(itemId) ?? []);
    if (plan.kind === "refuse") return this.rpc.replyError(id, plan.code, plan.message);
    if (plan.kind === "approval" && this.ctx.profile === "review") {
      // approval policy `never` should keep these from coming at all; if one does, no human may allow a
      // review task to write: the Bridge declines it on its own and says so
      this.ctx.emit("approval.auto_declined", autoDeclinedEvent({ ...plan.payload }, "review_task"));
      return this.rpc.reply(id, plan.onNoAnswer);
    }
    const key = JSON.stringify(id);
    this.withHuman.add(key);
    // true once: the human's answer and the provider's withdrawal race for the request
    const stillPending = (): boolean => this.withHuman.delete(key);
    if (plan.kind === "approval") {
      try {
        const r = await this.ctx.requestApproval(plan.payload);
        if (!stillPending()) return;
        // ServerFS itself ends the task on cancel_task: the interrupted turn is then no failure
        if (r.decision === "cancel_task") this.cancelRequested = true;
        this.rpc.reply(id, plan.answer(r));
      } catch {
        if (stillPending()) this.rpc.reply(id, plan.onNoAnswer);
      }
      return;
    }
    try {
      const r = await this.ctx.askQuestion(plan.payload);
      if (stillPending()) this.rpc.reply(id, plan.answer(r));
    } catch {
      if (stillPending()) this.rpc.replyError(id, NO_ANSWER, "no answer will come");
    }
  }

  private interrupt(): void {
    if (this.threadId === null || this.turnId === null) return;
    // the outcome comes with turn/completed (interrupted); a lost reply is covered by the caller's kill
    this.rpc.request("turn/interrupt", { threadId: this.threadId, turnId: this.turnId }).catch(() => undefined);
  }

  async sendMessage(text: string): Promise<void> {
    if (!this.running || this.result.settled || this.threadId === null || this.turnId === null) throw notActive();
    try {
      await this.rpc.request("turn/steer", { threadId: this.threadId, input: textInput(text), expectedTurnId: this.turnId });
    } catch (e) {
      if (e instanceof RpcFailure && e.kind === "closed") throw notActive();
      throw new ServerFsError("AGENT_PROVIDER_ERROR", "the agent runtime refused the message");
    }
  }

  cancel(): void {
    if (this.cancelRequested) return;
    this.cancelRequested = true;
    if (this.running) this.interrupt();
    else this.proc.closeStdin();
  }
}

export function createCodexAdapter(settings: CodexSettings): RuntimeAdapter {
  const bin = expandHome(settings.bin);
  const codexHome = expandHome(settings.codex_home);
  const envOf = (env: RunContext["env"]) => ({ ...env, CODEX_HOME: codexHome });
  return {
    name: "codex",
    async probe() {
      const probe = await probeVersion([bin, "--version"], envOf(process.env), settings.request_timeout_seconds * 1000);
      return runtimeInfo("codex", probe.available, probe.version, true);
    },
    listModels: () => listCodexModels([bin, "app-server"], envOf(process.env), settings.request_timeout_seconds * 1000, settings.models ?? []),
    onlyListedModels: (settings.models ?? []).length > 0,
    start(ctx) {
      return startRun(ctx, { command: [bin, "app-server"], env: envOf(ctx.env) }, (proc) => new CodexRun(proc, ctx, settings));
    },
  };
}
