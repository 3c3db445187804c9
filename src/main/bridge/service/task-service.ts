/**
 * The task service (docs/task-model.md#states-and-transitions–§8): the state machine, submission in the exact §5.3 order, HITL
 * requests, steering, cancellation, deadlines, and the write-run order of §11.3 around every run.
 * It runs on the Bridge's main thread; providers run in the provider worker, spool I/O in the spool
 * worker, periodic sweeps in the maintenance worker. Every state change is a compare-and-swap in the
 * store, so whichever side loses a race re-reads instead of overwriting.
 */
import type { Remote } from "comlink";
import * as Comlink from "comlink";
import type { AuditLog } from "../../../shared/audit.ts";
import type { Config } from "../../../shared/config/load.ts";
import type { RuntimeName } from "../../../shared/config/schema.ts";
import { type ErrorCode, ServerFsError } from "../../../shared/errors.ts";
import { isRequestId, isTaskId, newMark, newRequestId, newTaskId } from "../../../shared/ids.ts";
import { collectIfExpired, type GcScope } from "../../../shared/retention.ts";
import { isStorageFault } from "../../../shared/storage-fault.ts";
import { buildManifest } from "../../../shared/manifest.ts";
import {
  checkProcessGroup,
  DEFAULT_TERMINATE_BOUNDS,
  type GroupVerdict,
  KILL_BOUNDS,
  terminateProcessGroup,
} from "../../../shared/process-group.ts";
import { classifyResult, RESULT_PREVIEW_BYTES, resultPreview } from "../../../shared/spool.ts";
import { isTerminal, type Resolution, type Store, TASK_STATUSES, type TaskObject, type TaskRow, type TaskStatus } from "../../../shared/store/index.ts";
import { addSecondsIso, earlierIso, nowIso } from "../../../shared/time.ts";
import type { Workspace, Workspaces } from "../../../shared/workspace.ts";
import type { ProviderHost, RunReport } from "../../../workers/provider-protocol.ts";
import type { ProviderWorker } from "../../../workers/provider-worker.ts";
import type { Outcome } from "../../../workers/providers/types.ts";
import type { SpoolApi } from "../../../workers/spool-worker.ts";
import { type Guard, publishGuard, removeGuard, updateGuard } from "../../../shared/leases/guard-files.ts";
import { acquireLease, type Lease } from "../../../shared/leases/lock-files.ts";
import { clearGuard, listGuards } from "../../../shared/leases/operator-override.ts";
import type { SweepFinding } from "../../../shared/leases/reconcile-verdict.ts";
import { auditRecovery } from "../../../shared/leases/recovery-audit.ts";
import { type RecoveryScope, reconcileSlotLazily, settleFinding } from "../reconciliation.ts";
import { checkAnswers, checkApproval } from "../../../shared/hitl-validation.ts";
import { awaitEndedLeaseHolder } from "./ended-lease-holder.ts";
import { describeRequest } from "./request-payload.ts";
import { type LitterBaseline, noteLitterBaseline, removeLitter } from "./sandbox-litter.ts";
import type { RuntimeProbes } from "./runtime-probes.ts";
import {
  authorize,
  checkPrompt,
  normalizeStartPath,
  opaqueValue,
  requestFingerprint,
  resolveStartDirectory,
  type StartDirectory,
} from "./submission-checks.ts";
import { TimerTable } from "./timers.ts";
import { UnrecordedOutcomes } from "./unrecorded-outcomes.ts";
import { EventWaiters } from "./waiters.ts";

export interface ServiceDeps {
  config: Config;
  store: Store;
  workspaces: Workspaces;
  audit: AuditLog;
  probes: RuntimeProbes;
  provider: Remote<ProviderWorker>;
  spool: Remote<SpoolApi>;
  /** Asks for a retention GC pass (in the maintenance worker; at most one in flight) and resolves when it is done. */
  gc: () => Promise<void>;
  sharingGid: number | null;
}

interface PendingInteraction {
  requestId: string;
  resolve: (resolution: Resolution) => void;
  reject: (e: ServerFsError) => void;
}

/** A task with a live runner in this Bridge: from submission to the end of its finally path. */
interface LiveRun {
  taskId: string;
  slot: number;
  lease: Lease | null;
  interaction: PendingInteraction | null;
  /** Resolves when the finally path has run. */
  done: Promise<void>;
  /** A shutdown's group termination under way (§14 step 2); the finally path waits for it. */
  stopping: Promise<unknown> | null;
  /** A cancel, deadline or expiry asked the provider to stop (§7.2 step 5: then SIGKILL, no second grace). */
  stopRequested: boolean;
  /** Which sandbox litter names the start directory lacked before the provider started. */
  litter: LitterBaseline | null;
  /** The operational log's `task_started` line was written. */
  startLogged?: boolean;
}

export interface SubmitParams {
  runtime: string;
  workdir: string;
  path: string;
  profile: string;
  prompt: string;
  continue_from_task_id?: string | null;
  correlation_id?: string | null;
  idempotency_key?: string | null;
}

const ANSWER_RESPONSE_LIMIT = 1_000_000;

/** §14: the whole shutdown sequence is bounded (about 15 s). */
export const SHUTDOWN_BOUND_MS = 15_000;

const notFound = () => new ServerFsError("AGENT_TASK_NOT_FOUND", "no such task");

export class TaskService {
  readonly waiters = new EventWaiters();
  private readonly runs = new Map<string, LiveRun>();
  private readonly deadlines = new TimerTable();
  private readonly expiries = new TimerTable();
  private closing = false;
  private readonly unrecorded: UnrecordedOutcomes;

  constructor(private readonly deps: ServiceDeps) {
    this.unrecorded = new UnrecordedOutcomes(deps.audit);
  }

  get isClosing(): boolean {
    return this.closing;
  }

  /** A replacement provider worker after the previous one died (docs/task-model.md#threads). */
  /**
   * A provider worker died and its replacement is starting: runs dispatched meanwhile wait for it
   * instead of going to the dead one (which would fail them AGENT_PROVIDER_DISCONNECTED at once).
   */
  replacingProvider(ready: Promise<Remote<ProviderWorker>>): void {
    this.providerReady = ready.then((provider) => {
      this.deps.provider = provider;
    });
  }
  private providerReady: Promise<void> = Promise.resolve();

  /** Task ids with a live runner here (the maintenance sweep leaves those to their runner). */
  liveTaskIds(): string[] {
    return [...this.runs.keys()];
  }

  private get store(): Store {
    return this.deps.store;
  }
  private get lockDir(): string {
    return this.deps.config.bridge.lockDir;
  }
  private get lifecycle() {
    return this.deps.config.bridge.lifecycle;
  }

  private requireTask(taskId: string): TaskRow {
    const row = isTaskId(taskId) ? this.store.getTask(taskId) : null;
    if (!row) throw notFound();
    return row;
  }

  // ----- runtime.list, task.get, task.list -----

  async runtimeList() {
    return { runtimes: await this.deps.probes.list() };
  }

  get(taskId: string): TaskObject {
    const task = isTaskId(taskId) ? this.store.getTaskObject(taskId) : null;
    if (!task) throw notFound();
    return task;
  }

  list(p: { status?: string | null; limit?: number; before_task_id?: string | null }) {
    const status = p.status ?? undefined;
    if (status !== undefined && !(TASK_STATUSES as readonly string[]).includes(status)) {
      throw new ServerFsError("INVALID_REQUEST", "status is not a task status");
    }
    const page = this.store.listTasks({
      status: status as TaskStatus | undefined,
      limit: p.limit ?? 100,
      beforeTaskId: p.before_task_id ?? undefined,
    });
    const tasks = page.tasks.map((t) => this.store.getTaskObject(t.task_id)).filter((t): t is TaskObject => t !== null);
    return { tasks, next_before_task_id: page.nextBeforeTaskId };
  }

  // ----- task.submit (docs/bridge-rpc.md#tasksubmit, in order) -----

  async submit(p: SubmitParams) {
    if (this.closing) throw new ServerFsError("BRIDGE_CLOSED", "the Bridge is shutting down");
    const correlationId = opaqueValue(p.correlation_id, "correlation_id");
    const idempotencyKey = opaqueValue(p.idempotency_key, "idempotency_key");
    // step 3 without the wait: the pass runs beside the submit; the lookup below frees an expired key itself
    void this.deps.gc().catch(() => undefined);
    checkPrompt(p.prompt);
    const path = normalizeStartPath(p.path);
    const continueFrom = p.continue_from_task_id || null;
    const fingerprint = requestFingerprint({
      continue_from_task_id: continueFrom,
      path,
      profile: p.profile,
      prompt: p.prompt,
      runtime: p.runtime,
      workdir: p.workdir,
    });
    const replay = () => {
      if (idempotencyKey === null) return null;
      const existing = this.store.findByIdempotencyKey(idempotencyKey);
      if (!existing || collectIfExpired(this.gcScope, existing)) return null;
      if (existing.request_fingerprint !== fingerprint) {
        throw new ServerFsError("AGENT_IDEMPOTENCY_CONFLICT", "this idempotency key was used for a different request");
      }
      return { task_id: existing.task_id, status: existing.status, correlation_id: existing.correlation_id, idempotency_key: idempotencyKey };
    };
    const early = replay();
    if (early) return early;

    if (!this.deps.probes.has(p.runtime)) throw new ServerFsError("AGENT_RUNTIME_UNAVAILABLE", "this runtime is not enabled");
    const probe = await this.deps.probes.probe(p.runtime);
    if (!probe.available) throw new ServerFsError("AGENT_RUNTIME_UNAVAILABLE", "this runtime is not available");
    if (p.profile !== "review" && p.profile !== "workspace-write") {
      throw new ServerFsError("AGENT_PROFILE_NOT_ALLOWED", "the profile must be review or workspace-write");
    }
    const profile = p.profile;
    const ws = this.deps.workspaces.get(p.workdir);
    if (!ws) throw new ServerFsError("WORKDIR_NOT_FOUND", "no workdir has this alias");
    authorize(ws, p.runtime, profile);
    const startDir = resolveStartDirectory(ws, path);
    const continueNativeSessionId = continueFrom ? this.checkContinuation(continueFrom, p.runtime, ws, profile) : null;

    const createdAt = nowIso();
    const deadlineAt = addSecondsIso(createdAt, this.lifecycle.task_timeout_seconds);
    const manifest = buildManifest({
      runtime: {
        name: p.runtime as RuntimeName,
        version: "version" in probe ? probe.version : null,
        in_flight_recovery: "in_flight_recovery" in probe ? probe.in_flight_recovery : "none",
      },
      workdir: { alias: ws.alias, slot: ws.slot, read_only: ws.policy.read_only, agent_mode: ws.policy.agent_mode, agent_runtimes: ws.policy.agent_runtimes },
      relativeCwd: path,
      profile,
      lifecycle: this.lifecycle,
      continueFromTaskId: continueFrom,
      correlationId,
      deadlineAt,
      idempotencyKey,
    });

    // A lease held only by a task that already ended is waited for (bounded), outside the critical section.
    if (profile === "workspace-write") {
      await awaitEndedLeaseHolder(this.runs.values(), ws.slot, (id) => isTerminal(this.store.getTask(id)?.status ?? "failed"));
    }

    // Step 13: the critical section. It is synchronous, so no other submission interleaves.
    // A submission that was still validating when shutdown began must not start a run now (§14 step 1).
    if (this.closing) throw new ServerFsError("BRIDGE_CLOSED", "the Bridge is shutting down");
    const again = replay();
    if (again) return again;
    let lease: Lease | null = null;
    if (profile === "workspace-write") {
      if ([...this.runs.values()].some((r) => r.slot === ws.slot && r.lease !== null)) {
        throw new ServerFsError("WORKDIR_BUSY", "a write task holds this workdir");
      }
      this.lazyReconcile(ws.slot);
      lease = acquireLease(this.lockDir, ws.slot);
    }
    const taskId = newTaskId();
    let inserted: ReturnType<Store["insertTask"]>;
    try {
      inserted = this.store.insertTask(
        {
          task_id: taskId,
          runtime: p.runtime,
          workdir_alias: ws.alias,
          workdir_slot: ws.slot,
          relative_cwd: path,
          profile,
          created_at: createdAt,
          deadline_at: deadlineAt,
          continue_from_task_id: continueFrom,
          correlation_id: correlationId,
          idempotency_key: idempotencyKey,
          request_fingerprint: idempotencyKey === null ? null : fingerprint,
          manifest_json: manifest.json,
          manifest_sha256: manifest.sha256,
        },
        this.lifecycle.max_active_tasks,
      );
    } catch (e) {
      lease?.release();
      throw e;
    }
    if (inserted.kind === "idempotency_key_taken") {
      lease?.release();
      return replay()!;
    }
    const run: LiveRun = { taskId, slot: ws.slot, lease, interaction: null, done: Promise.resolve(), stopping: null, stopRequested: false, litter: null };
    this.runs.set(taskId, run);
    try {
      if (lease) publishGuard(this.lockDir, this.newGuard(inserted.task), this.deps.sharingGid);
    } catch (e) {
      const code = isStorageFault(e) ? "BRIDGE_STORAGE_ERROR" : "BRIDGE_SCHEDULING_FAILED";
      this.schedulingFailed(run, e instanceof ServerFsError && e.code === "WORKDIR_RECOVERY_REQUIRED" ? null : ws.slot, code);
      throw new ServerFsError(code, `task ${taskId} could not be scheduled`);
    }
    this.deadlines.arm(taskId, deadlineAt, () => void this.onDeadline(taskId));
    this.logTask("task_submitted", taskId);
    run.done = this.execute(run, ws, startDir, p.prompt, profile, continueNativeSessionId).catch((e) => {
      // every expected failure is settled inside; this keeps an unexpected one from taking the Bridge down
      this.deps.audit.error("run_failed", { task_id: taskId, error_type: e instanceof Error ? e.name : typeof e });
    });
    return { task_id: taskId, status: "queued", correlation_id: correlationId, idempotency_key: idempotencyKey };
  }

  /**
   * One operational log line about a task (docs/deployment.md "Logs"): its ids, runtime, profile and
   * status, plus `extra`; never its prompt or any content. An ended task also gets its error code and
   * how long it lived.
   */
  private logTask(event: string, taskId: string, extra: Record<string, string | number> = {}): void {
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

  private newGuard(task: TaskRow): Guard {
    return {
      schema_version: 1,
      slot: task.workdir_slot,
      task_id: task.task_id,
      runtime: task.runtime,
      workdir_alias: task.workdir_alias,
      correlation_id: task.correlation_id,
      native_session_id: null,
      native_turn_id: null,
      provider_pgid: null,
      provider_start_time: null,
      provider_mark: null,
      created_at: task.created_at,
      updated_at: task.created_at,
    };
  }

  /**
   * §5.3 step 13.8: the guard (if it names this task) goes, the lease goes, the task is interrupted
   * (BRIDGE_STORAGE_ERROR when the guard could not be written for a full or failing disk).
   */
  private schedulingFailed(run: LiveRun, guardSlot: number | null, code: "BRIDGE_SCHEDULING_FAILED" | "BRIDGE_STORAGE_ERROR"): void {
    if (guardSlot !== null) removeGuard(this.lockDir, guardSlot, run.taskId);
    run.lease?.release();
    this.runs.delete(run.taskId);
    this.unrecorded.attempt(run.taskId, () =>
      this.store.transition(run.taskId, "interrupted", {
        error: { code, message: "the task could not be scheduled" },
        events: [{ type: "task.interrupted", payload: { error_code: code } }],
      }),
    );
  }

  /** §5.3 step 10, in order; returns the prior native session id (in memory only). */
  private checkContinuation(fromId: string, runtime: string, ws: Workspace, profile: string): string {
    const prior = isTaskId(fromId) ? this.store.getTask(fromId) : null;
    if (!prior) throw new ServerFsError("AGENT_TASK_NOT_FOUND", "the task to continue does not exist");
    const notResumable = (why: string) => new ServerFsError("AGENT_SESSION_NOT_RESUMABLE", why);
    if (prior.runtime !== runtime || prior.workdir_alias !== ws.alias) throw notResumable("a continuation needs the same runtime and workdir");
    if (prior.profile === "review" && profile === "workspace-write") {
      throw new ServerFsError("AGENT_PROFILE_NOT_ALLOWED", "a review task cannot be continued as workspace-write");
    }
    if (!prior.native_session_id) throw notResumable("the task to continue has no session");
    if (!isTerminal(prior.status)) throw notResumable("the task to continue has not ended");
    return prior.native_session_id;
  }

  /**
   * §12.3 lazy reconciliation for a write submit: a guard whose provider is proven gone is cleared;
   * anything else keeps it and fails closed.
   */
  private lazyReconcile(slot: number): void {
    const cleared = reconcileSlotLazily(this.recoveryScope, slot);
    this.unrecorded.prune(this.store);
    if (!cleared) {
      throw new ServerFsError("WORKDIR_RECOVERY_REQUIRED", "the workdir slot has an unresolved active-slot guard");
    }
  }

  private get gcScope(): GcScope {
    const { stateDir, lockDir } = this.deps.config.bridge;
    return { store: this.store, stateDir, lockDir, retentionHours: this.lifecycle.retention_hours };
  }

  private get recoveryScope(): RecoveryScope {
    return { store: this.store, lockDir: this.lockDir, audit: this.deps.audit, unrecorded: (id) => this.unrecorded.has(id) };
  }

  // ----- periodic reconciliation and the operator override (§12.3, §12.5) -----

  /** The maintenance sweep's gone verdicts; acted on here, where every guard write happens. */
  providersGone(findings: SweepFinding[]): void {
    if (this.closing) return;
    for (const finding of findings) {
      // a store that still cannot take the write leaves the finding for the next pass
      this.unrecorded.attempt(finding.taskId, () => settleFinding({ ...this.recoveryScope, isLive: (id) => this.runs.has(id) }, finding));
      this.waiters.notify(finding.taskId);
    }
    this.unrecorded.prune(this.store);
  }

  recoveryList() {
    return { guards: listGuards(this.lockDir, this.store) };
  }

  recoveryClear(p: { slot: number; confirm: boolean }) {
    if (p.confirm !== true) throw new ServerFsError("INVALID_REQUEST", "confirm must be true");
    return clearGuard(this.recoveryScope, p.slot);
  }

  // ----- execution and the finally path (§5.4, §5.5) -----

  private async execute(
    run: LiveRun,
    ws: Workspace,
    startDir: StartDirectory,
    prompt: string,
    profile: "review" | "workspace-write",
    continueNativeSessionId: string | null,
  ): Promise<void> {
    let report: RunReport = { started: false, leaderExited: true, pgid: null, startTime: null };
    try {
      const mark = newMark();
      run.litter = noteLitterBaseline(ws, ws.confine(this.store.getTask(run.taskId)!.relative_cwd).segments);
      this.store.recordProvider(run.taskId, { mark });
      if (run.lease) updateGuard(this.lockDir, run.slot, run.taskId, { provider_mark: mark }, this.deps.sharingGid);
      await this.providerReady;
      report = await this.deps.provider.run(
        {
          taskId: run.taskId,
          runtime: this.store.getTask(run.taskId)!.runtime,
          cwd: startDir.path,
          startDir: startDir.verified,
          prompt,
          profile,
          continueNativeSessionId,
          mark,
          roots: [ws.workdir.bridgePath, ws.realRoot],
        },
        Comlink.proxy(this.hostFor(run, ws)),
      );
    } catch (e) {
      if (isStorageFault(e)) {
        await this.settleFailure(run.taskId, "BRIDGE_STORAGE_ERROR", "the Bridge could not write the task's state");
      } else {
        this.deps.audit.warn("provider_run_failed", { task_id: run.taskId, error_type: e instanceof Error ? e.name : typeof e });
        await this.settleFailure(run.taskId, "AGENT_PROVIDER_DISCONNECTED", "the provider worker was lost");
      }
    }
    await this.finallyPath(run, report);
  }

  private hostFor(run: LiveRun, ws: Workspace): ProviderHost {
    return {
      recorded: async (_taskId, facts) => {
        // the provider's group is known once it has been spawned: that is the task's start
        if (facts.pgid != null && !run.startLogged) {
          run.startLogged = true;
          this.logTask("task_started", run.taskId);
        }
        if (!run.lease) return;
        updateGuard(
          this.lockDir,
          run.slot,
          run.taskId,
          {
            native_session_id: facts.sessionId ?? null,
            native_turn_id: facts.turnId ?? null,
            provider_pgid: facts.pgid ?? null,
            provider_start_time: facts.startTime ?? null,
          },
          this.deps.sharingGid,
        );
      },
      eventsCommitted: () => this.waiters.notify(run.taskId),
      interact: (_taskId, kind, payload) => this.openInteraction(run, kind, describeRequest(kind, payload, ws)),
      withdrawn: () => {
        const pending = run.interaction;
        if (!pending) return;
        run.interaction = null;
        this.expiries.cancel(pending.requestId);
        this.unrecorded.attempt(run.taskId, () => this.store.staleRequest(run.taskId, pending.requestId, "withdrawn"));
        this.waiters.notify(run.taskId);
      },
      outcome: (_taskId, outcome) => this.onOutcome(run.taskId, outcome),
    };
  }

  /** §5.4 step 6 and 9: the single outcome of a run becomes the task's terminal state. */
  private async onOutcome(taskId: string, outcome: Outcome): Promise<void> {
    if (this.closing) return; // §14 step 2: whatever arrives during shutdown is discarded
    if (outcome.kind === "failed") return this.settleFailure(taskId, outcome.code, outcome.message);
    if (outcome.kind === "cancelled") {
      this.unrecorded.attempt(taskId, () => this.store.transition(taskId, "cancelled", { events: [{ type: "task.cancelled", payload: {} }] }));
      this.waiters.notify(taskId);
      return;
    }
    const task = this.store.getTask(taskId);
    if (task?.status !== "running") return; // cancelled or interrupted meanwhile: the text is discarded
    const cls = classifyResult(outcome.text);
    if (cls.storage === "too_large") return this.settleFailure(taskId, "AGENT_RESULT_TOO_LARGE", "the final response is larger than 8 MiB");
    const completed = { type: "task.completed", payload: { result_storage: cls.storage, result_size_bytes: cls.size_bytes } };
    if (cls.storage === "inline") {
      this.unrecorded.attempt(taskId, () =>
        this.store.transition(taskId, "succeeded", {
          from: ["running"],
          set: { final_response: outcome.text, result_storage: "inline", result_size_bytes: cls.size_bytes, result_sha256: cls.sha256 },
          events: [completed],
        }),
      );
    } else {
      const stateDir = this.deps.config.bridge.stateDir;
      try {
        await this.deps.spool.writeSpool(stateDir, taskId, outcome.text);
      } catch {
        return this.settleFailure(taskId, "AGENT_RESULT_STORAGE_ERROR", "the result could not be stored");
      }
      const done = this.unrecorded.attempt(taskId, () =>
        this.store.transition(taskId, "succeeded", {
          from: ["running"],
          set: { final_response: resultPreview(outcome.text), result_storage: "spool", result_size_bytes: cls.size_bytes, result_sha256: cls.sha256 },
          events: [{ type: "task.result_spooled", payload: { size_bytes: cls.size_bytes, sha256: cls.sha256 } }, completed],
        }),
      );
      if (!done) await this.deps.spool.removeSpool(stateDir, taskId).catch(() => false);
    }
    this.waiters.notify(taskId);
  }

  /** A coded failure: `interrupted` while waiting for a human, else `failed` (§5.4 step 9). */
  private async settleFailure(taskId: string, code: ErrorCode, message: string): Promise<void> {
    if (this.closing) return; // the shutdown ends the task with BRIDGE_SHUTDOWN instead
    // its end already failed to be written: the periodic sweep records it, not another wait on the store
    if (this.unrecorded.has(taskId)) return;
    const task = this.store.getTask(taskId);
    if (!task || isTerminal(task.status)) return;
    const waiting = task.status === "waiting_for_approval" || task.status === "waiting_for_question";
    const to = waiting || task.status === "queued" ? "interrupted" : "failed";
    const event = to === "failed" ? "task.failed" : "task.interrupted";
    this.unrecorded.attempt(taskId, () => this.store.transition(taskId, to, { error: { code, message }, events: [{ type: event, payload: { error_code: code } }] }));
    this.waiters.notify(taskId);
  }

  /** §5.5: confirm the provider stopped, then guard, lease, GC, and no waiter left waiting. */
  private async finallyPath(run: LiveRun, report: RunReport): Promise<void> {
    await run.stopping;
    const stopped = await this.confirmStopped(run, report);
    // A run that ended without a terminal state (the worker lost it, or the Bridge is stopping) must not stay active.
    if (this.closing) this.interruptForShutdown(run.taskId);
    else await this.settleFailure(run.taskId, "AGENT_PROVIDER_ERROR", "agent runtime failed");
    // only a provider proven stopped can no longer be using its sandbox's mount points
    if (stopped === "gone" && run.litter) removeLitter(run.litter);
    if (run.lease) {
      // a task whose end is not in the store keeps its guard (fail closed) until the sweep records it
      if (stopped === "gone" && !this.unrecorded.has(run.taskId)) removeGuard(this.lockDir, run.slot, run.taskId);
      else {
        const correlationId = this.store.getTask(run.taskId)?.correlation_id ?? null;
        auditRecovery(
          this.deps.audit,
          "recovery.guard_kept",
          { slot: run.slot, taskId: run.taskId, correlationId },
          { status: "UNKNOWN", providerActive: stopped === "gone" ? false : stopped === "alive" ? true : null },
        );
      }
    }
    run.lease?.release();
    run.interaction?.reject(new ServerFsError("AGENT_INTERACTION_EXPIRED", "the task ended"));
    run.interaction = null;
    this.deadlines.cancel(run.taskId);
    this.runs.delete(run.taskId);
    this.waiters.notify(run.taskId);
    this.logTask("task_ended", run.taskId);
    await this.deps.gc().catch(() => undefined);
  }

  /**
   * §5.5 step 1: "gone" when no provider was ever spawned or its whole group is gone, terminating
   * it if members remain. A provider is spawned only after the `starting` commit, which sets
   * `started_at`, so the row — not the worker's report, lost with a dead worker — says whether one
   * may exist.
   */
  private async confirmStopped(run: LiveRun, report: RunReport): Promise<GroupVerdict> {
    const row = this.store.getTask(run.taskId);
    if (row && row.started_at === null && !report.started) return "gone";
    const pgid = row?.provider_pgid ?? report.pgid;
    const start = row?.provider_start_time ?? report.startTime;
    const mark = row?.provider_mark ?? null;
    const verdict = checkProcessGroup(pgid, start, mark);
    if (verdict !== "alive") return verdict;
    // a stopped run already had the interrupt and the worker's 10 s wait: SIGKILL now (§7.2 step 5)
    if ((await terminateProcessGroup(pgid, start, mark, run.stopRequested ? KILL_BOUNDS : DEFAULT_TERMINATE_BOUNDS)).proven) return "gone";
    return checkProcessGroup(pgid, start, mark) === "cannot_check" ? "cannot_check" : "alive";
  }

  /** Ask the worker to stop the provider (interrupt, ≤ 10 s, then the finally path kills the group). */
  private stopProvider(taskId: string): void {
    const run = this.runs.get(taskId);
    if (!run) return;
    run.stopRequested = true;
    void this.deps.provider.cancel(taskId).catch(() => undefined);
  }

  // ----- HITL (§6) -----

  private async openInteraction(run: LiveRun, kind: "approval" | "question", payload: Record<string, unknown>): Promise<Resolution> {
    const task = this.store.getTask(run.taskId);
    if (!task?.deadline_at) throw new ServerFsError("INVALID_TASK_TRANSITION", "the task is not running");
    const timeout = this.lifecycle.interaction_timeout_seconds;
    const expiresAt = timeout === 0 ? task.deadline_at : earlierIso(addSecondsIso(nowIso(), timeout), task.deadline_at);
    const requestId = newRequestId();
    this.store.openRequest({ requestId, taskId: run.taskId, kind, payload, expiresAt });
    this.deps.audit.info("request_opened", { task_id: run.taskId, request_id: requestId, kind });
    this.waiters.notify(run.taskId);
    return new Promise<Resolution>((resolve, reject) => {
      run.interaction = { requestId, resolve, reject };
      this.expiries.arm(requestId, expiresAt, () => this.onExpiry(run.taskId, requestId));
    });
  }

  private checkReply(taskId: string, requestId: string, kind: "approval" | "question") {
    const task = this.requireTask(taskId);
    const request = isRequestId(requestId) ? this.store.getRequest(requestId) : null;
    if (!request || request.task_id !== taskId) throw new ServerFsError("REQUEST_NOT_FOUND", "no such request for this task");
    if (request.status === "resolved") throw new ServerFsError("REQUEST_ALREADY_RESOLVED", "the request was already answered");
    const stale = () => new ServerFsError("REQUEST_STALE", "the request is no longer pending");
    if (request.status === "stale" || task.pending_request_id !== requestId) throw stale();
    if (request.expires_at !== null && nowIso() >= request.expires_at) {
      this.onExpiry(taskId, requestId);
      throw stale();
    }
    if (request.kind !== kind) {
      throw kind === "approval"
        ? new ServerFsError("INVALID_APPROVAL_DECISION", "the request is a question, not an approval")
        : new ServerFsError("INVALID_QUESTION_ANSWER", "the request is an approval, not a question");
    }
    return { task, request, payload: JSON.parse(request.payload_json) as Record<string, unknown> };
  }

  private resolve(taskId: string, requestId: string, resolution: Resolution) {
    const change = this.store.resolveRequest(taskId, requestId, resolution);
    if (!change) {
      const now = this.store.getRequest(requestId);
      if (now?.status === "resolved") throw new ServerFsError("REQUEST_ALREADY_RESOLVED", "the request was already answered");
      throw new ServerFsError("REQUEST_STALE", "the request is no longer pending");
    }
    this.expiries.cancel(requestId);
    // the decision is one of a fixed set; answers to questions are content and stay out of the log
    const decision = "decision" in resolution ? resolution.decision : undefined;
    this.deps.audit.info("request_answered", { task_id: taskId, request_id: requestId, kind: change.request.kind, decision });
    const run = this.runs.get(taskId);
    if (run?.interaction?.requestId === requestId) {
      run.interaction.resolve(resolution);
      run.interaction = null;
    }
    this.waiters.notify(taskId);
    return change.task;
  }

  respondApproval(p: { task_id: string; request_id: string; decision: string; granted_permission_ids?: string[] }) {
    const { payload } = this.checkReply(p.task_id, p.request_id, "approval");
    const resolution = checkApproval(payload, p.decision, p.granted_permission_ids);
    const task = this.resolve(p.task_id, p.request_id, resolution);
    if (resolution.decision === "cancel_task") this.cancel(p.task_id);
    return { task_id: p.task_id, request_id: p.request_id, resolved: true as const, correlation_id: task.correlation_id };
  }

  answerQuestion(p: { task_id: string; request_id: string; answers: unknown[] }) {
    const { payload } = this.checkReply(p.task_id, p.request_id, "question");
    const resolution = checkAnswers(payload as never, p.answers);
    const task = this.resolve(p.task_id, p.request_id, resolution);
    return { task_id: p.task_id, request_id: p.request_id, resolved: true as const, correlation_id: task.correlation_id };
  }

  /** §8.2: a request reached `expires_at` (timer, sweep or a late reply's check). */
  onExpiry(taskId: string, requestId: string): void {
    // a store that cannot take it leaves the request pending: the maintenance sweep finds it again
    const change = this.unrecorded.attempt(taskId, () => this.store.staleRequest(taskId, requestId, "expired"));
    if (!change) return;
    this.expiries.cancel(requestId);
    const run = this.runs.get(taskId);
    if (run?.interaction?.requestId === requestId) {
      run.interaction.reject(new ServerFsError("AGENT_INTERACTION_EXPIRED", "the request expired"));
      run.interaction = null;
    }
    const task = change.task;
    if (change.request.expires_at === task.deadline_at) {
      void this.onDeadline(taskId);
    } else {
      this.unrecorded.attempt(taskId, () =>
        this.store.transition(taskId, "interrupted", {
          error: { code: "AGENT_INTERACTION_TIMED_OUT", message: "a human request expired before the task deadline" },
          events: [{ type: "task.interrupted", payload: { error_code: "AGENT_INTERACTION_TIMED_OUT" } }],
        }),
      );
      this.stopProvider(taskId);
    }
    this.waiters.notify(taskId);
  }

  /** §8.1: interrupt the provider, stale the request, interrupt the task, then stop it for good. */
  async onDeadline(taskId: string): Promise<void> {
    const task = this.store.getTask(taskId);
    if (!task || isTerminal(task.status)) return;
    this.stopProvider(taskId);
    if (task.pending_request_id) this.onExpiryForDeadline(taskId, task.pending_request_id);
    this.unrecorded.attempt(taskId, () =>
      this.store.transition(taskId, "interrupted", {
        error: { code: "AGENT_TASK_TIMED_OUT", message: "the task deadline passed" },
        events: [{ type: "task.interrupted", payload: { error_code: "AGENT_TASK_TIMED_OUT" } }],
      }),
    );
    this.waiters.notify(taskId);
  }

  private onExpiryForDeadline(taskId: string, requestId: string): void {
    if (!this.unrecorded.attempt(taskId, () => this.store.staleRequest(taskId, requestId, "expired"))) return;
    this.expiries.cancel(requestId);
    const run = this.runs.get(taskId);
    if (run?.interaction?.requestId === requestId) {
      run.interaction.reject(new ServerFsError("AGENT_INTERACTION_EXPIRED", "the request expired"));
      run.interaction = null;
    }
  }

  // ----- steering and cancellation (§7) -----

  async sendMessage(p: { task_id: string; message: string }) {
    if (p.message === "") throw new ServerFsError("INVALID_REQUEST", "message must not be empty");
    if (Buffer.byteLength(p.message) > 65_536) throw new ServerFsError("AGENT_MESSAGE_TOO_LARGE", "the message is larger than 64 KiB");
    const task = this.requireTask(p.task_id);
    if (isTerminal(task.status)) throw new ServerFsError("AGENT_TASK_TERMINAL", "the task has ended; submit a continuation instead");
    if (task.status === "queued" || !this.runs.has(p.task_id)) throw new ServerFsError("AGENT_TASK_NOT_ACTIVE", "the task cannot take a message yet");
    const probe = await this.deps.probes.probe(task.runtime);
    if ("live_steer" in probe && !probe.live_steer) {
      throw new ServerFsError("AGENT_PROVIDER_ERROR", "live steering is not supported by this runtime");
    }
    await this.deps.provider.sendMessage(p.task_id, p.message);
    this.store.appendEvents(p.task_id, [{ type: "user.message", payload: { bytes: Buffer.byteLength(p.message) } }]);
    this.waiters.notify(p.task_id);
    return { task_id: p.task_id, accepted: true as const, correlation_id: task.correlation_id };
  }

  /** §7.2: idempotent and terminal-first; the cancel is committed before the answer. */
  cancel(taskId: string) {
    const task = this.requireTask(taskId);
    if (isTerminal(task.status)) return { task_id: taskId, status: task.status, correlation_id: task.correlation_id };
    const moved = this.store.transition(taskId, "cancelled", { events: [{ type: "task.cancelled", payload: {} }] });
    const status = moved ? "cancelled" : (this.store.getTask(taskId)?.status ?? "cancelled");
    const run = this.runs.get(taskId);
    if (run?.interaction) {
      run.interaction.reject(new ServerFsError("AGENT_INTERACTION_EXPIRED", "the task was cancelled"));
      run.interaction = null;
    }
    this.stopProvider(taskId);
    this.waiters.notify(taskId);
    void this.deps.gc().catch(() => undefined);
    return { task_id: taskId, status, correlation_id: task.correlation_id };
  }

  // ----- events and results (§4.4, §10.3) -----

  async events(p: { task_id: string; after_event_id?: number; limit?: number; wait_ms?: number }, signal?: AbortSignal) {
    const task = this.requireTask(p.task_id);
    const after = p.after_event_id ?? 0;
    const limit = p.limit ?? 100;
    const waitMs = p.wait_ms ?? 0;
    if (after < 0 || limit < 1 || limit > 500 || waitMs < 0 || waitMs > 25_000) {
      throw new ServerFsError("INVALID_LIMIT", "after_event_id must be ≥ 0, limit 1..500 and wait_ms 0..25000");
    }
    let page = this.store.listEvents(p.task_id, after, limit);
    if (page.length === 0 && waitMs > 0 && !isTerminal(task.status) && !this.closing) {
      await this.waiters.wait(
        p.task_id,
        waitMs,
        () => this.store.maxEventId(p.task_id) > after || isTerminal(this.store.getTask(p.task_id)?.status ?? "failed"),
        signal,
      );
      page = this.store.listEvents(p.task_id, after, limit);
    }
    // Keep the encoded response inside 1 MiB; a page always holds at least one event.
    let bytes = 0;
    let keep = 0;
    for (const e of page) {
      bytes += Buffer.byteLength(JSON.stringify(e)) + 1;
      if (keep > 0 && bytes > ANSWER_RESPONSE_LIMIT) break;
      keep++;
    }
    const events = page.slice(0, keep);
    return {
      correlation_id: task.correlation_id,
      events,
      next_after_event_id: events.length > 0 ? events[events.length - 1]!.event_id : after,
    };
  }

  async readResult(p: { task_id: string; offset_bytes?: number; max_bytes?: number }) {
    const task = this.requireTask(p.task_id);
    if (task.result_storage !== "spool" || task.result_size_bytes === null) {
      throw new ServerFsError("AGENT_RESULT_NOT_RETRIEVABLE", "the task has no spooled result; read final_response from get_agent_task");
    }
    const maxBytes = p.max_bytes ?? RESULT_PREVIEW_BYTES;
    const offset = p.offset_bytes ?? 0;
    if (maxBytes < 1 || maxBytes > 65_536) throw new ServerFsError("INVALID_RESULT_LIMIT", "max_bytes must be 1..65536");
    if (offset < 0) throw new ServerFsError("INVALID_RESULT_OFFSET", "offset_bytes must be ≥ 0");
    const chunk = await this.deps.spool.readSpoolChunk(this.deps.config.bridge.stateDir, task.task_id, task.result_size_bytes, offset, maxBytes);
    return { ...chunk, correlation_id: task.correlation_id };
  }

  // ----- shutdown (§14) -----

  /**
   * §14 steps 2–4, bounded by `boundMs`. Queued tasks never had a provider and are interrupted at
   * once, which also keeps the worker from starting them. Every live provider group is terminated
   * and verified in parallel, with no interrupt grace first; each run's finally path then
   * interrupts its task with BRIDGE_SHUTDOWN, removes its guard only if the stop was verified and
   * releases its lease. Whatever the bound cuts short is interrupted all the same and keeps its
   * guard for the next start to reconcile.
   */
  async shutdown(boundMs = SHUTDOWN_BOUND_MS): Promise<void> {
    this.closing = true;
    this.waiters.close();
    this.deadlines.cancelAll();
    this.expiries.cancelAll();
    for (const task of this.store.listActive()) {
      if (task.status === "queued") this.interruptForShutdown(task.task_id, ["queued"]);
    }
    const runs = [...this.runs.values()];
    for (const run of runs) {
      this.stopProvider(run.taskId);
      run.stopping = this.terminateRecorded(run.taskId);
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, boundMs);
    });
    await Promise.race([Promise.all(runs.map((r) => r.done.catch(() => undefined))), bound]);
    clearTimeout(timer);
    for (const task of this.store.listActive()) this.interruptForShutdown(task.task_id);
    for (const run of this.runs.values()) run.lease?.release();
  }

  /** Terminates the group a task's row records, if a provider may have been spawned. */
  private async terminateRecorded(taskId: string): Promise<void> {
    const row = this.store.getTask(taskId);
    if (!row || row.started_at === null) return;
    await terminateProcessGroup(row.provider_pgid, row.provider_start_time, row.provider_mark);
  }

  private interruptForShutdown(taskId: string, from?: readonly TaskStatus[]): void {
    // a store that cannot take it leaves the task active for the next start to reconcile
    const moved = this.unrecorded.attempt(taskId, () =>
      this.store.transition(taskId, "interrupted", {
        ...(from ? { from } : {}),
        error: { code: "BRIDGE_SHUTDOWN", message: "the Bridge stopped" },
        events: [{ type: "task.interrupted", payload: { error_code: "BRIDGE_SHUTDOWN" } }],
      }),
    );
    if (moved) this.waiters.notify(taskId);
  }
}
