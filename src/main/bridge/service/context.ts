/**
 * What every part of the task service shares (docs/task-model.md#states-and-transitions): its
 * dependencies, the live runs, the deadline and expiry timers, the event waiters, the outcomes the
 * store could not take, and whether shutdown has begun. Offers `ServiceDeps` and `ServiceContext`.
 * The parts (submit.ts, run-lifecycle.ts, interactions.ts, ...) are functions over one context.
 */
import type { Remote } from "comlink";
import type { AuditLog } from "../../../shared/audit.ts";
import type { Config } from "../../../shared/config/load.ts";
import { ServerFsError } from "../../../shared/errors.ts";
import { isTaskId } from "../../../shared/ids.ts";
import { releaseMemory } from "../../../shared/release-memory.ts";
import type { GcScope } from "../../../shared/retention.ts";
import type { Store, TaskRow } from "../../../shared/store/index.ts";
import type { Workspaces } from "../../../shared/workspace.ts";
import type { ProviderWorker } from "../../../workers/provider-worker.ts";
import type { SpoolApi } from "../../../workers/spool-worker.ts";
import type { BridgeMetrics } from "../metrics.ts";
import type { RecoveryScope } from "../reconciliation.ts";
import { LiveRuns } from "./live-runs.ts";
import type { RuntimeProbes } from "./runtime-probes.ts";
import { TimerTable } from "./timers.ts";
import { UnrecordedOutcomes } from "./unrecorded-outcomes.ts";
import { EventWaiters } from "./waiters.ts";

export interface ServiceDeps {
  config: Config;
  store: Store;
  workspaces: Workspaces;
  audit: AuditLog;
  /** The counters since start, fed by `audit` (metrics.ts). */
  metrics: BridgeMetrics;
  probes: RuntimeProbes;
  provider: Remote<ProviderWorker>;
  spool: Remote<SpoolApi>;
  /** Asks for a retention GC pass (in the maintenance worker; at most one in flight) and resolves when it is done. */
  gc: () => Promise<void>;
  /** Each worker that holds task data gives memory back (src/shared/release-memory.ts); failures are ignored. */
  releaseWorkerMemory: () => void;
  sharingGid: number | null;
}

/**
 * How long the Bridge stays quiet (no run ending, no large read-back going on) before it gives memory
 * back (docs/performance.md "## Bridge").
 */
const IDLE_RELEASE_MS = 1_000;
/**
 * Bytes answered over RPC since the last release that make a release worth it: a few pages of an
 * 8 MiB result read back, or some hundreds of task objects polled.
 */
const ANSWERED_RELEASE_BYTES = 1024 * 1024;

export const notFound = () => new ServerFsError("AGENT_TASK_NOT_FOUND", "no such task");

export class ServiceContext {
  readonly waiters = new EventWaiters();
  readonly runs = new LiveRuns();
  readonly deadlines = new TimerTable();
  readonly expiries = new TimerTable();
  readonly unrecorded: UnrecordedOutcomes;
  /** Shutdown has begun: nothing new starts, and late outcomes are discarded. */
  closing = false;
  /** The state database was found removed or replaced under the Bridge; only a restart clears it. */
  private stateLost = false;
  private idleRelease: ReturnType<typeof setTimeout> | null = null;
  /** Bytes answered over RPC since memory was last given back, and when the release was last armed. */
  private answeredBytes = 0;
  private answeredAtArm = 0;
  /** Settles when the provider worker runs are dispatched to is up (see `replacingProvider`). */
  providerReady: Promise<void> = Promise.resolve();

  constructor(readonly deps: ServiceDeps) {
    this.unrecorded = new UnrecordedOutcomes(deps.audit);
  }

  get store(): Store {
    return this.deps.store;
  }
  get lockDir(): string {
    return this.deps.config.bridge.lockDir;
  }
  get lifecycle() {
    return this.deps.config.bridge.lifecycle;
  }

  get gcScope(): GcScope {
    const { stateDir, lockDir } = this.deps.config.bridge;
    return { store: this.store, stateDir, lockDir, retentionHours: this.lifecycle.retention_hours };
  }

  get recoveryScope(): RecoveryScope {
    return { store: this.store, lockDir: this.lockDir, audit: this.deps.audit, unrecorded: (id) => this.unrecorded.has(id) };
  }

  /**
   * docs/reliability.md#the-state-database-stays-the-one-open: the database's path must still name the
   * file open here before a submission or a decision is taken, else it would be acknowledged into a
   * file that vanishes at the next start. Fails closed (BRIDGE_STATE_LOST) from then until a restart.
   */
  requireState(): void {
    if (!this.stateLost && this.store.fileLost()) this.noteStateLost("request");
    if (this.stateLost) throw new ServerFsError("BRIDGE_STATE_LOST", "the Bridge's state database was removed or replaced while it ran; restart the Bridge");
  }

  /** Logged once, at error level: the operator must restart the Bridge. */
  noteStateLost(foundBy: "request" | "maintenance"): void {
    if (this.stateLost) return;
    this.stateLost = true;
    this.deps.audit.error("state_database_lost", { found_by: foundBy, live_tasks: this.runs.size });
  }

  requireTask(taskId: string): TaskRow {
    const row = isTaskId(taskId) ? this.store.getTask(taskId) : null;
    if (!row) throw notFound();
    return row;
  }

  /**
   * One operational log line about a task (docs/deployment.md "Logs"): its ids, runtime, profile and
   * status, plus `extra`; never its prompt or any content. An ended task also gets its error code and
   * how long it lived.
   */
  logTask(event: string, taskId: string, extra: Record<string, string | number> = {}): void {
    const t = this.store.getTask(taskId);
    if (!t) return;
    const ended = t.completed_at !== null;
    this.deps.audit.info(event, {
      task_id: taskId,
      runtime: t.runtime,
      profile: t.profile,
      workdir: t.workdir_alias,
      status: t.status,
      ...(ended ? { error_code: t.error_code ?? undefined, duration_ms: Date.parse(t.completed_at!) - Date.parse(t.created_at) } : {}),
      ...extra,
    });
  }

  /** Called as each run's finally path ends: the last one arms the idle release (`armIdleRelease`). */
  noteRunEnded(): void {
    if (this.runs.size === 0) this.armIdleRelease();
  }

  /**
   * Called with each response line's size: once 1 MiB has been answered since the last release (a
   * result read back in pages, a flood of task.get or task.events), the idle release is armed too.
   */
  noteAnswered(bytes: number): void {
    this.answeredBytes += bytes;
    if (this.answeredBytes >= ANSWERED_RELEASE_BYTES && !this.idleRelease) this.armIdleRelease();
  }

  /**
   * Once the Bridge is idle, every thread that holds task data gives memory back
   * (src/shared/release-memory.ts), so a flood of events or a large result, written or read, does not
   * stay resident. Idle: no run left, `IDLE_RELEASE_MS` since the last run ended (each end restarts
   * the delay, so a burst of runs ends first), and less than 1 MiB answered during that delay (a
   * read-back or a flood still going puts it off by another delay; a trickle of small answers, a
   * client polling, does not). A run still going when it fires leaves it to that run's end.
   */
  private armIdleRelease(): void {
    this.answeredAtArm = this.answeredBytes;
    if (this.idleRelease) {
      this.idleRelease.refresh();
      return;
    }
    this.idleRelease = setTimeout(() => {
      this.idleRelease = null;
      if (this.closing || this.runs.size > 0) return;
      if (this.answeredBytes - this.answeredAtArm >= ANSWERED_RELEASE_BYTES) return this.armIdleRelease();
      const answered = this.answeredBytes;
      this.answeredBytes = 0;
      releaseMemory(this.store);
      this.deps.releaseWorkerMemory();
      this.deps.audit.debug("memory_released", { answered_bytes: answered });
    }, IDLE_RELEASE_MS);
    this.idleRelease.unref();
  }

  /** Asks for a retention GC pass without waiting for it (the pass's own failures are its worker's). */
  requestGc(): void {
    void this.deps.gc().catch(() => undefined);
  }

  /** Ask the worker to stop the provider (interrupt, ≤ 10 s, then the finally path kills the group). */
  stopProvider(taskId: string): void {
    const run = this.runs.get(taskId);
    if (!run) return;
    run.stopRequested = true;
    void this.deps.provider.cancel(taskId).catch(() => undefined);
  }
}
