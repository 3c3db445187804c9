/**
 * A task's run (docs/task-model.md#states-and-transitions): it is dispatched to the provider worker,
 * which calls back through the `ProviderHost` built here (provider facts into the guard, events
 * committed, human requests, the outcome); whatever happens, the finally path proves the provider
 * stopped and then lets go of guard, lease, timers and waiters. Offers `executeRun`.
 */
import * as Comlink from "comlink";
import type { Profile } from "../../../shared/config/schema.ts";
import { ServerFsError } from "../../../shared/errors.ts";
import { newMark } from "../../../shared/ids.ts";
import { removeGuard, updateGuard } from "../../../shared/leases/guard-files.ts";
import { auditRecovery } from "../../../shared/leases/recovery-audit.ts";
import { type GroupVerdict, proveStopped } from "../../../shared/process-group.ts";
import { isStorageFault } from "../../../shared/storage-fault.ts";
import type { Workspace } from "../../../shared/workspace.ts";
import type { ProviderHost, RunReport } from "../../../workers/provider-protocol.ts";
import type { RunChoices } from "../../../workers/providers/types.ts";
import type { ServiceContext } from "./context.ts";
import { openInteraction, withdrawInteraction } from "./interactions.ts";
import type { LiveRun } from "./live-runs.ts";
import { onOutcome, settleFailure } from "./outcome.ts";
import { describeRequest } from "./request-payload.ts";
import { noteLitterBaseline, removeLitter } from "./sandbox-litter.ts";
import { interruptForShutdown } from "./shutdown.ts";
import type { StartDirectory } from "./submission-checks.ts";

export async function executeRun(
  ctx: ServiceContext,
  run: LiveRun,
  ws: Workspace,
  startDir: StartDirectory,
  prompt: string,
  profile: Profile,
  continueNativeSessionId: string | null,
  choices: RunChoices,
): Promise<void> {
  let report: RunReport = { started: false, pgid: null, startTime: null };
  try {
    const mark = newMark();
    run.litter = noteLitterBaseline(ws, ws.confine(ctx.store.getTask(run.taskId)!.relative_cwd).segments);
    // the row gets the mark with the provider worker's `starting` commit, before the spawn
    if (run.lease) updateGuard(ctx.lockDir, run.slot, run.taskId, { provider_mark: mark }, ctx.deps.sharingGid);
    await ctx.providerReady;
    report = await ctx.deps.provider.run(
      {
        taskId: run.taskId,
        runtime: ctx.store.getTask(run.taskId)!.runtime,
        cwd: startDir.path,
        startDir: startDir.verified,
        prompt,
        profile,
        continueNativeSessionId,
        choices,
        mark,
        roots: [ws.workdir.bridgePath, ws.realRoot],
      },
      Comlink.proxy(hostFor(ctx, run, ws)),
    );
  } catch (e) {
    if (isStorageFault(e)) {
      await settleFailure(ctx, run.taskId, "BRIDGE_STORAGE_ERROR", "the Bridge could not write the task's state");
    } else {
      ctx.deps.audit.warn("provider_run_failed", { task_id: run.taskId, error_type: e instanceof Error ? e.name : typeof e });
      await settleFailure(ctx, run.taskId, "AGENT_PROVIDER_DISCONNECTED", "the provider worker was lost");
    }
  }
  await finallyPath(ctx, run, report);
}

function hostFor(ctx: ServiceContext, run: LiveRun, ws: Workspace): ProviderHost {
  return {
    recorded: async (_taskId, facts) => {
      // the provider's group is known once it has been spawned: that is the task's start
      if (facts.pgid != null && !run.startLogged) {
        run.startLogged = true;
        ctx.logTask("task_started", run.taskId);
      }
      if (!run.lease) return;
      updateGuard(
        ctx.lockDir,
        run.slot,
        run.taskId,
        {
          native_session_id: facts.sessionId ?? null,
          native_turn_id: facts.turnId ?? null,
          provider_pgid: facts.pgid ?? null,
          provider_start_time: facts.startTime ?? null,
        },
        ctx.deps.sharingGid,
      );
    },
    eventsCommitted: () => ctx.waiters.notify(run.taskId),
    askApproval: (_taskId, payload) => openInteraction(ctx, run, "approval", describeRequest("approval", payload, ws)),
    askQuestion: (_taskId, payload) => openInteraction(ctx, run, "question", describeRequest("question", payload, ws)),
    withdrawn: () => withdrawInteraction(ctx, run),
    outcome: (_taskId, outcome) => onOutcome(ctx, run.taskId, outcome),
  };
}

/** The finally path (docs/task-model.md#the-finally-path): confirm the provider stopped, then guard, lease, GC, and no waiter left waiting. */
async function finallyPath(ctx: ServiceContext, run: LiveRun, report: RunReport): Promise<void> {
  await run.stopping;
  const stopped = await confirmStopped(ctx, run, report);
  // A run that ended without a terminal state (the worker lost it, or the Bridge is stopping) must not stay active.
  if (ctx.closing) interruptForShutdown(ctx, run.taskId);
  else await settleFailure(ctx, run.taskId, "AGENT_PROVIDER_ERROR", "agent runtime failed");
  // only a provider proven stopped can no longer be using its sandbox's mount points
  if (stopped === "gone" && run.litter) removeLitter(run.litter);
  if (run.lease) {
    // a task whose end is not in the store keeps its guard (fail closed) until the sweep records it
    if (stopped === "gone" && !ctx.unrecorded.has(run.taskId)) removeGuard(ctx.lockDir, run.slot, run.taskId);
    else {
      const correlationId = ctx.store.getTask(run.taskId)?.correlation_id ?? null;
      auditRecovery(
        ctx.deps.audit,
        "recovery.guard_kept",
        { slot: run.slot, taskId: run.taskId, correlationId },
        { status: "UNKNOWN", providerActive: stopped === "gone" ? false : stopped === "alive" ? true : null },
      );
    }
  }
  run.lease?.release();
  ctx.runs.takeInteraction(run.taskId)?.reject(new ServerFsError("AGENT_INTERACTION_EXPIRED", "the task ended"));
  ctx.deadlines.cancel(run.taskId);
  ctx.runs.delete(run.taskId);
  ctx.waiters.notify(run.taskId);
  ctx.logTask("task_ended", run.taskId);
  ctx.noteRunEnded();
  await ctx.deps.gc().catch(() => undefined);
}

/**
 * The finally path's step 1: "gone" when no provider was ever spawned or its whole group is gone,
 * terminating it if members remain. The provider worker runs the check and the termination, so their
 * `/proc` passes stay off the main thread; with the worker lost, the main thread runs them itself. A
 * provider is spawned only after the `starting` commit, which sets `started_at`, so the row — not the
 * worker's report, lost with a dead worker — says whether one may exist.
 */
async function confirmStopped(ctx: ServiceContext, run: LiveRun, report: RunReport): Promise<GroupVerdict> {
  const row = ctx.store.getTask(run.taskId);
  if (row && row.started_at === null && !report.started) return "gone";
  const group = [row?.provider_pgid ?? report.pgid, row?.provider_start_time ?? report.startTime, row?.provider_mark ?? null, run.stopRequested] as const;
  return ctx.deps.provider.proveStopped(...group).catch(() => proveStopped(...group));
}
