/**
 * `task.submit` (docs/bridge-rpc.md#tasksubmit), its checks in the documented order, the critical
 * section that inserts the task and takes the workdir's lease, and the scheduling of its run.
 * Offers `submitTask`.
 */
import type { Params } from "../../../shared/bridge-protocol/methods.ts";
import type { ResultInput } from "../../../shared/bridge-protocol/results.ts";
import type { RuntimeName } from "../../../shared/config/schema.ts";
import { ServerFsError } from "../../../shared/errors.ts";
import { isTaskId, newTaskId } from "../../../shared/ids.ts";
import { type Guard, publishGuard, removeGuard } from "../../../shared/leases/guard-files.ts";
import { acquireLease, type Lease } from "../../../shared/leases/lock-files.ts";
import { buildManifest } from "../../../shared/manifest.ts";
import { opaqueValue } from "../../../shared/opaque-value.ts";
import { collectIfExpired } from "../../../shared/retention.ts";
import { isStorageFault } from "../../../shared/storage-fault.ts";
import { isTerminal, type Store, type TaskRow } from "../../../shared/store/index.ts";
import { addSecondsIso, nowIso } from "../../../shared/time.ts";
import type { Workspace } from "../../../shared/workspace.ts";
import type { ServiceContext } from "./context.ts";
import { awaitEndedLeaseHolder } from "./ended-lease-holder.ts";
import { onDeadline } from "./expiry.ts";
import type { LiveRun } from "./live-runs.ts";
import { budgetMicroUsd, needsListing, recordedChoices, resolveChoices } from "./model-choices.ts";
import { lazyReconcile } from "./recovery.ts";
import { executeRun } from "./run-lifecycle.ts";
import { authorize, checkPrompt, normalizeStartPath, requestFingerprint, resolveStartDirectory } from "./submission-checks.ts";

export async function submitTask(ctx: ServiceContext, p: Params<"task.submit">): Promise<ResultInput<"task.submit">> {
  if (ctx.closing) throw new ServerFsError("BRIDGE_CLOSED", "the Bridge is shutting down");
  const correlationId = opaqueValue(p.correlation_id, "correlation_id", "INVALID_REQUEST");
  const idempotencyKey = opaqueValue(p.idempotency_key, "idempotency_key", "INVALID_REQUEST");
  const submitterSub = opaqueValue(p.submitter?.sub, "submitter.sub", "INVALID_REQUEST");
  const submitterClientId = opaqueValue(p.submitter?.client_id, "submitter.client_id", "INVALID_REQUEST");
  // step 3 without the wait: the pass runs beside the submit; the lookup below frees an expired key itself
  ctx.requestGc();
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
    model: p.model,
    effort: p.effort,
    max_budget_usd: p.max_budget_usd,
  });
  const replay = (): ResultInput<"task.submit"> | null => {
    if (idempotencyKey === null) return null;
    const existing = ctx.store.findByIdempotencyKey(idempotencyKey);
    if (!existing || collectIfExpired(ctx.gcScope, existing)) return null;
    if (existing.request_fingerprint !== fingerprint) {
      throw new ServerFsError("AGENT_IDEMPOTENCY_CONFLICT", "this idempotency key was used for a different request");
    }
    return { task_id: existing.task_id, status: existing.status, correlation_id: existing.correlation_id, idempotency_key: idempotencyKey, replayed: true };
  };
  const early = replay();
  if (early) return early;

  if (!ctx.deps.probes.has(p.runtime)) throw new ServerFsError("AGENT_RUNTIME_UNAVAILABLE", "this runtime is not enabled");
  const probe = await ctx.deps.probes.probe(p.runtime);
  if (!probe.available) throw new ServerFsError("AGENT_RUNTIME_UNAVAILABLE", "this runtime is not available");
  if (p.profile !== "review" && p.profile !== "workspace-write") {
    throw new ServerFsError("AGENT_PROFILE_NOT_ALLOWED", "the profile must be review or workspace-write");
  }
  const profile = p.profile;
  const ws = ctx.deps.workspaces.get(p.workdir);
  if (!ws) throw new ServerFsError("WORKDIR_NOT_FOUND", "no workdir has this alias");
  authorize(ws, p.runtime, profile);
  const startDir = resolveStartDirectory(ws, path);
  const prior = continueFrom ? checkContinuation(ctx, continueFrom, p.runtime, ws, profile) : null;
  const continueNativeSessionId = prior?.native_session_id ?? null;
  // a continuation keeps what its parent was given, unless it asks otherwise
  const inherited = recordedChoices(prior?.manifest_json ?? null);
  const asked = { model: p.model ?? inherited.model, effort: p.effort ?? inherited.effort, max_budget_usd: p.max_budget_usd ?? inherited.max_budget_usd };
  // only a submission that must see the models waits for them (a Codex listing spawns an app-server)
  const onlyListed = ctx.deps.probes.onlyListedModels(p.runtime);
  const listing = needsListing(asked, onlyListed) ? await ctx.deps.probes.models(p.runtime) : null;
  const choices = resolveChoices(p.runtime, asked, listing, onlyListed);

  // the record in wall-clock time, and the same instant on the monotonic clock, which counts it down (timers.ts)
  const createdAt = nowIso();
  const deadlineAt = addSecondsIso(createdAt, ctx.lifecycle.task_timeout_seconds);
  const deadlineDue = ctx.deadlines.instantIn(ctx.lifecycle.task_timeout_seconds * 1000);
  const manifest = buildManifest({
    runtime: {
      name: p.runtime as RuntimeName,
      version: "version" in probe ? probe.version : null,
      in_flight_recovery: "in_flight_recovery" in probe ? probe.in_flight_recovery : "none",
    },
    workdir: { alias: ws.alias, slot: ws.slot, read_only: ws.policy.read_only, agent_mode: ws.policy.agent_mode, agent_runtimes: ws.policy.agent_runtimes },
    relativeCwd: path,
    profile,
    lifecycle: ctx.lifecycle,
    continueFromTaskId: continueFrom,
    correlationId,
    deadlineAt,
    idempotencyKey,
    choices: {
      model: choices.model,
      effort: choices.effort,
      max_budget_micro_usd: choices.max_budget_usd === null ? null : budgetMicroUsd(choices.max_budget_usd),
    },
  });

  // A lease held only by a task that already ended is waited for (bounded), outside the critical section.
  if (profile === "workspace-write") {
    await awaitEndedLeaseHolder(ctx.runs.values(), ws.slot, (id) => isTerminal(ctx.store.getTask(id)?.status ?? "failed"));
  }

  // Step 13: the critical section. It is synchronous, so no other submission interleaves.
  // A submission that was still validating when shutdown began must not start a run now (docs/task-model.md#shutdown).
  if (ctx.closing) throw new ServerFsError("BRIDGE_CLOSED", "the Bridge is shutting down");
  const again = replay();
  if (again) return again;
  let lease: Lease | null = null;
  if (profile === "workspace-write") {
    if (ctx.runs.values().some((r) => r.slot === ws.slot && r.lease !== null)) {
      throw new ServerFsError("WORKDIR_BUSY", "a write task holds this workdir");
    }
    lazyReconcile(ctx, ws.slot);
    lease = acquireLease(ctx.lockDir, ws.slot);
  }
  const taskId = newTaskId();
  let inserted: ReturnType<Store["insertTask"]>;
  try {
    inserted = ctx.store.insertTask(
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
        submitter_sub: submitterSub,
        submitter_client_id: submitterClientId,
        request_fingerprint: idempotencyKey === null ? null : fingerprint,
        manifest_json: manifest.json,
        manifest_sha256: manifest.sha256,
      },
      ctx.lifecycle.max_active_tasks,
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
  ctx.runs.add(run);
  try {
    if (lease) publishGuard(ctx.lockDir, newGuard(inserted.task), ctx.deps.sharingGid);
  } catch (e) {
    const code = isStorageFault(e) ? "BRIDGE_STORAGE_ERROR" : "BRIDGE_SCHEDULING_FAILED";
    schedulingFailed(ctx, run, e instanceof ServerFsError && e.code === "WORKDIR_RECOVERY_REQUIRED" ? null : ws.slot, code);
    throw new ServerFsError(code, `task ${taskId} could not be scheduled`);
  }
  ctx.deadlines.armAt(taskId, deadlineDue, () => void onDeadline(ctx, taskId));
  ctx.logTask("task_submitted", taskId);
  run.done = executeRun(ctx, run, ws, startDir, p.prompt, profile, continueNativeSessionId, choices).catch((e) => {
    // every expected failure is settled inside; this keeps an unexpected one from taking the Bridge down
    ctx.deps.audit.error("run_failed", { task_id: taskId, error_type: e instanceof Error ? e.name : typeof e });
  });
  return { task_id: taskId, status: "queued", correlation_id: correlationId, idempotency_key: idempotencyKey, replayed: false };
}
function newGuard(task: TaskRow): Guard {
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
 * The last submit check (docs/bridge-rpc.md#tasksubmit, row 15) failed: the guard (if it names this task) goes, the lease goes, the task is interrupted
 * (BRIDGE_STORAGE_ERROR when the guard could not be written for a full or failing disk).
 */
function schedulingFailed(ctx: ServiceContext, run: LiveRun, guardSlot: number | null, code: "BRIDGE_SCHEDULING_FAILED" | "BRIDGE_STORAGE_ERROR"): void {
  if (guardSlot !== null) removeGuard(ctx.lockDir, guardSlot, run.taskId);
  run.lease?.release();
  ctx.runs.delete(run.taskId);
  const error = { code, message: "the task could not be scheduled" };
  ctx.unrecorded.attempt(run.taskId, () => ctx.store.endTask(run.taskId, { to: "interrupted", error }));
}

/** The continuation checks (docs/bridge-rpc.md#tasksubmit, row 10), in order; returns the prior task (its native session id stays in memory only). */
function checkContinuation(ctx: ServiceContext, fromId: string, runtime: string, ws: Workspace, profile: string): TaskRow & { native_session_id: string } {
  const prior = isTaskId(fromId) ? ctx.store.getTask(fromId) : null;
  if (!prior) throw new ServerFsError("AGENT_TASK_NOT_FOUND", "the task to continue does not exist");
  const notResumable = (why: string) => new ServerFsError("AGENT_SESSION_NOT_RESUMABLE", why);
  if (prior.runtime !== runtime || prior.workdir_alias !== ws.alias) throw notResumable("a continuation needs the same runtime and workdir");
  if (prior.profile === "review" && profile === "workspace-write") {
    throw new ServerFsError("AGENT_PROFILE_NOT_ALLOWED", "a review task cannot be continued as workspace-write");
  }
  if (!prior.native_session_id) throw notResumable("the task to continue has no session");
  if (!isTerminal(prior.status)) throw notResumable("the task to continue has not ended");
  return { ...prior, native_session_id: prior.native_session_id };
}
