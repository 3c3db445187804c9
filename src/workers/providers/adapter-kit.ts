/**
 * Pieces every runtime adapter shares: coded failure outcomes, the outcome that settles once, the
 * handle of a run that never spawned, the `runtime.list` entry of docs/bridge-rpc.md#runtimelist (the capabilities differ only in steering),
 * and the `TokenCount` schema of the usage both real runtimes report.
 */
import * as v from "valibot";
import { isServerFsError, ServerFsError } from "../../shared/errors.ts";
import { cutUtf8 } from "../../shared/utf8.ts";
import { type ProviderProcess, type SpawnSpec, spawnProvider } from "./spawn.ts";
import type { Outcome, RunContext, RunHandle, RuntimeInfo } from "./types.ts";

/** A token count as a runtime reports it (a `task.usage` field): a non-negative integer, 0 when absent. */
export const TokenCount = v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(0)), 0);

/** docs/events.md#limits: adapters cut long free text in events to this many bytes. */
export const EVENT_TEXT_BYTES = 32_768;

/** A UTF-8-safe prefix of at most 32 KiB and whether it was cut. */
export const cutEventText = (text: string): { text: string; truncated: boolean } => cutUtf8(text, EVENT_TEXT_BYTES);

/** `{[key]: text}` cut to the event limit, with `truncated: true` when it was cut. */
export function textPayload(key: string, text: string): Record<string, unknown> {
  const cut = cutEventText(text);
  return cut.truncated ? { [key]: cut.text, truncated: true } : { [key]: cut.text };
}

export const failed = (code: ServerFsError["code"], message: string, stderrTail?: string): Outcome =>
  stderrTail ? { kind: "failed", code, message, stderrTail } : { kind: "failed", code, message };

/** A thrown ServerFsError keeps its code; anything else is the generic provider failure. */
export const failedFrom = (e: unknown): Outcome => (isServerFsError(e) ? failed(e.code, e.message) : failed("AGENT_PROVIDER_ERROR", "agent runtime failed"));

export const notActive = (): ServerFsError => new ServerFsError("AGENT_TASK_NOT_ACTIVE", "the provider is not ready for a message");

/**
 * A run's outcome, settled exactly once (docs/runtimes.md#the-adapter-contract): the first `settle`
 * wins and later ones are ignored, so every path that ends a run may simply call it. `onSettle`
 * runs once, before the outcome resolves (an adapter closes the provider's input there).
 */
export class SettleOnce<T> {
  readonly promise: Promise<T>;
  private resolve!: (value: T) => void;
  private done = false;

  constructor(private readonly onSettle?: () => void) {
    this.promise = new Promise<T>((resolve) => {
      this.resolve = resolve;
    });
  }

  get settled(): boolean {
    return this.done;
  }

  settle(value: T): void {
    if (this.done) return;
    this.done = true;
    this.onSettle?.();
    this.resolve(value);
  }
}

/** What an adapter's run object offers once its provider is spawned. */
export interface AdapterRun {
  readonly outcome: Promise<Outcome>;
  drive(): Promise<void>;
  /** Live steering; absent for a runtime without it (then `startRun` is given its refusal). */
  sendMessage?(text: string): Promise<void>;
  cancel(): void;
}

/**
 * Spawns the provider in `ctx.cwd` with the run's mark and idle-timer hook, starts driving it, and
 * assembles the handle; a spawn failure is the run's outcome (docs/task-model.md#execution step 2).
 */
export function startRun(
  ctx: RunContext,
  spec: Pick<SpawnSpec, "command" | "env" | "lineCap">,
  makeRun: (proc: ProviderProcess) => AdapterRun,
  steering?: RunHandle["sendMessage"],
): RunHandle {
  let proc: ProviderProcess;
  try {
    proc = spawnProvider({
      ...spec,
      cwd: ctx.cwd,
      startDir: ctx.startDir,
      mark: ctx.mark,
      keepBytes: ctx.keepBytes,
      onOutput: () => ctx.activity(),
    });
  } catch (e) {
    return spawnFailure(failedFrom(e), steering);
  }
  const run = makeRun(proc);
  void run.drive();
  return {
    outcome: run.outcome,
    pgid: proc.pgid,
    sendMessage: steering ?? ((text) => (run.sendMessage ? run.sendMessage(text) : Promise.reject(notActive()))),
    cancel: () => run.cancel(),
    closeAndWait: (ms) => proc.closeAndWait(ms),
  };
}

/** The handle of a run whose provider could not be spawned: its outcome is already known. */
export function spawnFailure(outcome: Outcome, sendMessage: RunHandle["sendMessage"] = () => Promise.reject(notActive())): RunHandle {
  return { outcome: Promise.resolve(outcome), pgid: null, sendMessage, cancel: () => undefined, closeAndWait: async () => true };
}

export function runtimeInfo(name: string, available: boolean, version: string | null, liveSteer: boolean): RuntimeInfo {
  return {
    name,
    available,
    version,
    persistent_session: true,
    live_steer: liveSteer,
    interactive_approval: true,
    interactive_question: true,
    in_flight_recovery: "session-resume",
  };
}
