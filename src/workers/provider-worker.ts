/**
 * The provider worker (docs/task-model.md#threads): spawns each task's provider through its runtime
 * adapter, normalizes and redacts its events into batches, and records native ids and the process
 * group on this thread's own connection. The batches are committed by the event writer, a worker of
 * this worker with a connection of its own (src/workers/event-writer.ts), while this thread goes on
 * parsing. Decisions that touch a human, a guard, a lease or a timer go back to the task service
 * through the proxied `ProviderHost`.
 */
import * as Comlink from "comlink";
import { openAuditLog } from "../shared/audit-file.ts";
import { byteSize } from "../shared/byte-size.ts";
import { exposeApi, type StartedWorker, startWorker } from "../shared/comlink-worker.ts";
import type { ConfigFile } from "../shared/config/schema.ts";
import { type ErrorCode, ServerFsError } from "../shared/errors.ts";
import { landingOf } from "../shared/fs/landing.ts";
import { LIMITS } from "../shared/limits.ts";
import { LEADER_WAIT_MS, proveStopped } from "../shared/process-group.ts";
import { normalizeAbsolute, OUTSIDE_MARK, Redactor, WORKDIR_MARK } from "../shared/redact.ts";
import { releaseMemory } from "../shared/release-memory.ts";
import { workerUrl } from "../shared/self-command.ts";
import { Store } from "../shared/store/index.ts";
import { byteLength, encoder } from "../shared/utf8.ts";
import { autoDeclinedEvent, type Land, landPaths, outsideWorkdir } from "./auto-decline.ts";
import { DEFAULT_BATCHING, EventBatcher } from "./event-batcher.ts";
import type { EventWriterApi } from "./event-writer.ts";
import { IdleTimer } from "./idle-timer.ts";
import type { ProviderHost, ProviderWorkerApi, ReportedOutcome, RunReport, RunSpec } from "./provider-protocol.ts";
import type { NativeFacts, Outcome, RunContext, RunHandle, RuntimeAdapter } from "./providers/types.ts";
import { createAdapters, type RuntimeOptions } from "./runtimes.ts";

interface LiveRun {
  handle: RunHandle | null;
  cancelled: () => void;
}

let db: Store | null = null;
let writer: StartedWorker<EventWriterApi> | null = null;
let adapters = new Map<string, RuntimeAdapter>();
let providerEnv: Record<string, string | undefined> = {};
let idleSeconds: Record<string, number> = {};

const idleTimeoutMs = (runtime: string): number => (idleSeconds[runtime] ?? 0) * 1000;
const runs = new Map<string, LiveRun>();

const store = (): Store => {
  if (!db) throw new ServerFsError("BRIDGE_PROTOCOL_ERROR", "the provider worker is not initialized");
  return db;
};

const eventWriter = (): StartedWorker<EventWriterApi>["remote"] => {
  if (!writer) throw new ServerFsError("BRIDGE_PROTOCOL_ERROR", "the provider worker is not initialized");
  return writer.remote;
};

/** A writer that stopped cannot store the run's events: the run ends as a storage fault would end it. */
const unstored = (): ErrorCode => "BRIDGE_STORAGE_ERROR";

/**
 * How much of a long provider string a run keeps (docs/runtimes.md#process-model). Only the final
 * text needs more than an event's 32 KiB, and only up to 8 MiB once redacted; redaction turns a
 * root into `<workdir>`, so a text can shrink by up to the longest root's length over the mark's.
 * A text past this bound is over 8 MiB redacted too (bar path runs that normalize shorter).
 */
function keepBytes(roots: readonly string[]): number {
  const longest = Math.max(0, ...roots.map((r) => normalizeAbsolute(r).length));
  return Math.ceil(LIMITS.max_spooled_result_bytes * Math.max(1, longest / WORKDIR_MARK.length));
}

/** Where a path a request names lands: relative ones from the task's start directory, links followed. */
function landIn(spec: RunSpec): Land {
  const anchor = { realRoot: spec.startDir.root, roots: spec.roots, start: spec.startDir.segments };
  return (path) => {
    const segments = landingOf(anchor, path);
    if (segments === null) return OUTSIDE_MARK;
    return segments.length === 0 ? anchor.realRoot : `${anchor.realRoot}/${segments.join("/")}`;
  };
}

const tooLarge = (): ReportedOutcome => ({
  kind: "failed",
  code: "AGENT_RESULT_TOO_LARGE",
  message: `the final response is larger than ${byteSize(LIMITS.max_spooled_result_bytes)}`,
});

async function run(spec: RunSpec, host: ProviderHost): Promise<RunReport> {
  const notStarted: RunReport = { started: false, pgid: null, startTime: null };
  const adapter = adapters.get(spec.runtime);
  if (!store().transition(spec.taskId, "starting", { from: ["queued"], mark: spec.mark })) return notStarted;
  if (!adapter) {
    const error = { code: "AGENT_RUNTIME_UNAVAILABLE" as const, message: "the runtime is not enabled" };
    store().endTask(spec.taskId, { to: "failed", error });
    return notStarted;
  }

  const redactor = new Redactor(spec.roots);
  const land = landIn(spec);
  const keep = keepBytes(spec.roots);
  const facts: NativeFacts = {};
  let cancelRequested!: () => void;
  const cancelled = new Promise<void>((resolve) => {
    cancelRequested = resolve;
  });
  const live: LiveRun = { handle: null, cancelled: cancelRequested };
  runs.set(spec.taskId, live);

  let brokenBy: ErrorCode | null = null;
  const broke = (code: ErrorCode) => {
    brokenBy ??= code;
    live.handle?.cancel();
  };
  const batcher = new EventBatcher(
    (types, jsons) => eventWriter().commit(spec.taskId, types, jsons).catch(unstored),
    () => host.eventsCommitted(spec.taskId),
    broke,
    DEFAULT_BATCHING,
  );

  let reported = false;
  const report = async (outcome: ReportedOutcome) => {
    if (reported) return;
    reported = true;
    await batcher.settled();
    await host.outcome(spec.taskId, outcome.kind === "final" ? Comlink.transfer(outcome, [outcome.utf8.buffer]) : outcome);
  };
  const idle = new IdleTimer(idleTimeoutMs(spec.runtime), () => {
    void report({ kind: "failed", code: "AGENT_PROVIDER_DISCONNECTED", message: "the provider wrote nothing within its idle timeout" }).then(() => {
      live.handle?.cancel();
      live.cancelled();
    });
  });
  const withHuman = async <T>(ask: () => Promise<T>): Promise<T> => {
    await batcher.settled();
    idle.pause();
    try {
      return await ask();
    } finally {
      idle.resume();
    }
  };

  const ctx: RunContext = {
    taskId: spec.taskId,
    cwd: spec.cwd,
    startDir: spec.startDir,
    prompt: spec.prompt,
    profile: spec.profile,
    continueNativeSessionId: spec.continueNativeSessionId,
    choices: spec.choices,
    mark: spec.mark,
    env: providerEnv,
    keepBytes: keep,
    emit: (type, payload) => batcher.push(type, redactor.redactValue(payload)),
    requestApproval: (payload) => {
      const redacted = redactor.redactValue({ ...landPaths(payload, land) });
      if (outsideWorkdir(redacted)) {
        batcher.push("approval.auto_declined", autoDeclinedEvent(redacted, "outside_workdir"));
        return Promise.resolve({ decision: "deny", granted_permission_ids: [] });
      }
      return withHuman(() => host.askApproval(spec.taskId, redacted));
    },
    askQuestion: (payload) => withHuman(() => host.askQuestion(spec.taskId, redactor.redactValue({ ...payload }))),
    activity: () => {
      idle.touch();
      return batcher.backlog();
    },
    busy: (working) => (working ? idle.pause() : idle.resume()),
    abandonInteraction: () => {
      void batcher.settled().then(() => host.withdrawn(spec.taskId));
    },
    recordNative: async (n) => {
      Object.assign(facts, n);
      store().recordProvider(spec.taskId, {
        pgid: n.pgid ?? null,
        startTime: n.startTime ?? null,
        nativeSessionId: n.sessionId ?? null,
        nativeTurnId: n.turnId ?? null,
      });
      await host.recorded(spec.taskId, n);
    },
    // Not at the group's record: only once the provider passed its handshake and has its input is
    // the task running (docs/task-model.md#execution steps 3–4), so a running task always takes steering.
    // The writer serves calls in order, so the batches before this commit before `task.started`
    // and the ones after it after, without waiting here.
    started: () =>
      batcher.inOrder(() =>
        eventWriter()
          .started(spec.taskId, { runtime: spec.runtime, ...spec.choices })
          .catch(unstored),
      ),
  };

  const handle = adapter.start(ctx);
  live.handle = handle;
  idle.touch();
  const delivered = handle.outcome.then(async (outcome) => {
    // settle first: the last batch may be the one that breaks an event limit, which outranks the outcome
    await batcher.settled();
    return report(finalOutcome(outcome, brokenBy, redactor, keep));
  });
  await Promise.race([delivered, cancelled]);
  idle.stop();
  await handle.closeAndWait(LEADER_WAIT_MS);
  await batcher.settled();
  await eventWriter()
    .endRun(spec.taskId)
    .catch(() => undefined);
  runs.delete(spec.taskId);
  return { started: true, pgid: handle.pgid, startTime: facts.startTime ?? null };
}

/**
 * An event-limit break outranks what the provider said; every text is redacted before it leaves. A
 * final text over `keep` bytes may have been cut as it was read, and one over 8 MiB once redacted is
 * too large either way: neither crosses to the main thread (docs/task-model.md#results).
 */
function finalOutcome(outcome: Outcome, brokenBy: ErrorCode | null, redactor: Redactor, keep: number): ReportedOutcome {
  if (brokenBy) {
    const message = brokenBy === "BRIDGE_STORAGE_ERROR" ? "the task's events could not be stored" : "the task broke an event limit";
    return { kind: "failed", code: brokenBy, message };
  }
  if (outcome.kind === "final") {
    if (byteLength(outcome.text) > keep) return tooLarge();
    const text = redactor.redactText(outcome.text);
    if (byteLength(text) > LIMITS.max_spooled_result_bytes) return tooLarge();
    // encoded once, here; the buffer is transferred, not copied (ReportedOutcome)
    return { kind: "final", utf8: encoder.encode(text) };
  }
  if (outcome.kind === "failed") return { kind: "failed", code: outcome.code, message: redactor.redactText(outcome.message) };
  return outcome;
}

const api: ProviderWorkerApi & { configure(file: Pick<ConfigFile, "bridge" | "runtimes">, options: RuntimeOptions): void } = {
  async init(stateDir, logLevel, auditFile) {
    db = Store.open(stateDir, { log: openAuditLog(logLevel, auditFile) });
    const started = startWorker<EventWriterApi>(workerUrl("event-writer"), () => new ServerFsError("BRIDGE_STORAGE_ERROR", "the event writer stopped"));
    writer = started;
    // A writer lost on its own would leave every later run unable to store an event; this worker ends
    // with it instead, and the Bridge replaces both (docs/task-model.md#threads: its runs end
    // AGENT_PROVIDER_DISCONNECTED). `shutdown` lets go of the writer before it stops it.
    void started.exited.then(() => {
      if (writer === started) process.exit(1);
    });
    await started.remote.init(stateDir, logLevel, auditFile);
  },
  configure(file, options) {
    adapters = createAdapters(file, options);
    idleSeconds = {
      codex: file.runtimes.codex.event_idle_timeout_seconds,
      claude: file.runtimes.claude.event_idle_timeout_seconds,
    };
    providerEnv = { ...process.env };
  },
  run,
  // the finally path's group check and termination: its `/proc` passes stay off the main thread
  proveStopped,
  async cancel(taskId) {
    const live = runs.get(taskId);
    if (!live) return;
    live.handle?.cancel();
    live.cancelled();
  },
  async sendMessage(taskId, text) {
    const live = runs.get(taskId);
    if (!live?.handle) throw new ServerFsError("AGENT_TASK_NOT_ACTIVE", "the provider is not ready for a message");
    await live.handle.sendMessage(text);
  },
  async releaseMemory() {
    releaseMemory(db);
    await writer?.remote.releaseMemory();
  },
  async shutdown() {
    for (const live of runs.values()) live.handle?.cancel();
    await writer?.remote.close().catch(() => undefined);
    writer?.terminate();
    writer = null;
    db?.close();
    db = null;
  },
};

export type ProviderWorker = typeof api;

exposeApi(api);
