/**
 * The adapter for the scripted `fake` runtime (docs/runtimes.md#fake): spawns the fake provider process
 * and drives it over the wire of `fake-wire.ts`, turning its requests into the Bridge's normalized
 * approval and question payloads.
 *
 * Offers:
 * - `createFakeAdapter(options?)` → `RuntimeAdapter` named "fake". `options.command` is the provider's
 *   argv (default `[process.execPath, FAKE_PROVIDER_SCRIPT]`, right for a checkout; a compiled binary
 *   passes `[process.execPath, "__fake-provider"]`); `options.lineCap` overrides the 64 MiB line cap
 *   (tests use a small one).
 * - `FAKE_PROVIDER_SCRIPT`: the absolute path of `src/workers/fake-provider.ts`.
 *
 * Run order: spawn (its own group) → `recordNative({pgid, startTime})` awaited → the `ready` handshake
 * (else AGENT_RUNTIME_NOT_READY) → the task input → `started()` → events, requests and native ids as
 * they come → one outcome. The stream is read to its end even after the outcome, so the provider never blocks on
 * a full pipe; a malformed or oversized line ends the run with AGENT_PROVIDER_ERROR and stops reading.
 */
import { join } from "node:path";
import { ServerFsError } from "../../shared/errors.ts";
import { DECISIONS } from "../../shared/hitl-validation.ts";
import { failed, failedFrom, notActive, runtimeInfo, SettleOnce, startRun, textPayload } from "./adapter-kit.ts";
import { type AdapterLine, type ProviderLine, ProviderLineSchema, parseLine } from "./fake-wire.ts";
import type { ProviderProcess } from "./spawn.ts";
import type { ApprovalPayload, Outcome, QuestionPayload, RunContext, RuntimeAdapter } from "./types.ts";

export const FAKE_PROVIDER_SCRIPT = join(import.meta.dir, "..", "fake-provider.ts");

export interface FakeAdapterOptions {
  command?: readonly string[];
  lineCap?: number;
}

function approvalPayload(command: string, fileChange: { path: string; text: string } | undefined): ApprovalPayload {
  if (fileChange === undefined) return { category: "command", title: "Run a command", command_display: command, available_decisions: [...DECISIONS] };
  // a file change offers no session-wide approval, as Codex's own file-change requests do not
  return {
    category: "file_change",
    title: "Apply file changes",
    reason: "the fake provider wants to write one file",
    file_changes: [{ path: fileChange.path, change: { write: fileChange.text } }],
    available_decisions: ["approve_once", "deny", "cancel_task"],
  };
}

function questionPayload(prompt: string): QuestionPayload {
  return {
    questions: [
      {
        question_id: "q1",
        prompt,
        options: [
          { option_id: "a", label: "a" },
          { option_id: "b", label: "b" },
        ],
        multi_select: false,
        allow_free_text: true,
      },
    ],
  };
}

/** One run of the fake provider: the state between its process and the caller. */
class FakeRun {
  private readonly result = new SettleOnce<Outcome>();
  readonly outcome = this.result.promise;
  /** The task input was sent and the stream is still open. */
  private running = false;
  private cancelRequested = false;
  private nextMessageId = 0;
  private readonly acks = new Map<number, { resolve: () => void; reject: (e: ServerFsError) => void }>();

  constructor(
    private readonly proc: ProviderProcess,
    private readonly ctx: RunContext,
  ) {}

  private send(line: AdapterLine): void {
    this.proc.send(JSON.stringify(line));
  }

  async drive(): Promise<void> {
    try {
      // a rejection ends the run with its code, before the provider has its task input
      await this.ctx.recordNative({ pgid: this.proc.pgid, startTime: this.proc.startTime });
      const first = await this.proc.lines.next();
      const ready = first.done ? null : parseLine(ProviderLineSchema, first.value);
      if (this.cancelRequested) {
        this.result.settle({ kind: "cancelled" });
      } else if (ready?.type !== "ready") {
        this.result.settle(failed("AGENT_RUNTIME_NOT_READY", "the agent runtime failed its handshake", this.proc.stderrTail()));
      } else {
        this.send({
          type: "run",
          task_id: this.ctx.taskId,
          prompt: this.ctx.prompt,
          cwd: this.ctx.cwd,
          profile: this.ctx.profile,
          continue_session_id: this.ctx.continueNativeSessionId,
        });
        this.running = true;
        this.ctx.started();
        for await (const raw of this.proc.lines) {
          const line = parseLine(ProviderLineSchema, raw);
          if (line === null) throw new ServerFsError("AGENT_PROVIDER_ERROR", "the agent runtime sent a malformed line");
          await this.handle(line);
        }
      }
      this.result.settle(
        this.cancelRequested ? { kind: "cancelled" } : failed("AGENT_PROVIDER_ERROR", "the agent runtime ended before an outcome", this.proc.stderrTail()),
      );
    } catch (e) {
      this.result.settle(failedFrom(e));
    } finally {
      this.running = false;
      // stops reading where the run ended early (handshake, malformed line), so the stream is released
      await this.proc.lines.return(undefined);
      this.proc.closeStdin();
      for (const ack of this.acks.values()) ack.reject(notActive());
      this.acks.clear();
    }
  }

  private async handle(line: ProviderLine): Promise<void> {
    if (this.result.settled) return;
    switch (line.type) {
      case "ready":
        return;
      case "session":
        return this.ctx.recordNative({ sessionId: line.session_id, turnId: line.turn_id });
      case "agent_message": {
        this.ctx.emit("agent.message", textPayload("text", line.text));
        return;
      }
      case "approval_request": {
        // answered without blocking the stream; a request that cannot reach a human is a denial
        const { id } = line;
        void this.ctx.requestApproval(approvalPayload(line.command, line.file_change)).then(
          (r) => this.send({ type: "approval_response", id, decision: r.decision }),
          () => this.send({ type: "approval_response", id, decision: "deny" }),
        );
        return;
      }
      case "question_request": {
        const { id } = line;
        void this.ctx.askQuestion(questionPayload(line.prompt)).then(
          (r) => this.send({ type: "question_response", id, answers: r.answers }),
          () => this.send({ type: "question_response", id, answers: null }),
        );
        return;
      }
      case "message_ack":
        this.acks.get(line.id)?.resolve();
        this.acks.delete(line.id);
        return;
      case "final":
        return this.result.settle({ kind: "final", text: line.text });
      case "failed":
        return this.result.settle(failed(line.code, line.message));
      case "cancelled":
        return this.result.settle({ kind: "cancelled" });
    }
  }

  sendMessage(text: string): Promise<void> {
    if (!this.running || this.result.settled) return Promise.reject(notActive());
    const id = this.nextMessageId++;
    const acked = new Promise<void>((resolve, reject) => this.acks.set(id, { resolve, reject }));
    this.send({ type: "message", id, text });
    return acked;
  }

  cancel(): void {
    if (this.cancelRequested) return;
    this.cancelRequested = true;
    if (this.running) this.send({ type: "interrupt" });
    this.proc.closeStdin();
  }
}

export function createFakeAdapter(options: FakeAdapterOptions = {}): RuntimeAdapter {
  const command = options.command ?? [process.execPath, FAKE_PROVIDER_SCRIPT];
  return {
    name: "fake",
    async probe() {
      return runtimeInfo("fake", true, "1", true);
    },
    // one model, so the submit checks can be driven without a real CLI; the fake provider ignores it
    async listModels() {
      return [{ model: "fake-model", efforts: ["low", "high"], default_effort: "low", is_default: true }];
    },
    onlyListedModels: false,
    start(ctx) {
      return startRun(ctx, { command, env: ctx.env, lineCap: options.lineCap }, (proc) => new FakeRun(proc, ctx));
    },
  };
}
