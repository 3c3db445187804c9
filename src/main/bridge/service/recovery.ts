/**
 * Reconciliation as the task service drives it (docs/reliability.md): the lazy check a write submit
 * makes on its slot, the maintenance sweep's gone verdicts acted on, and the operator's
 * `recovery.list` / `recovery.clear`. Offers `lazyReconcile`, `providersGone`, `recoveryList`,
 * `recoveryClear`.
 */
import type { Params } from "../../../shared/bridge-protocol/methods.ts";
import type { ResultInput } from "../../../shared/bridge-protocol/results.ts";
import { ServerFsError } from "../../../shared/errors.ts";
import { clearGuard, listGuards } from "../../../shared/leases/operator-override.ts";
import type { SweepFinding } from "../../../shared/leases/reconcile-verdict.ts";
import { reconcileSlotLazily, settleFinding } from "../reconciliation.ts";
import type { ServiceContext } from "./context.ts";

/**
 * Lazy reconciliation (docs/task-model.md#reconciliation) for a write submit: a guard whose provider is proven gone is cleared;
 * anything else keeps it and fails closed.
 */
export function lazyReconcile(ctx: ServiceContext, slot: number): void {
  const cleared = reconcileSlotLazily(ctx.recoveryScope, slot);
  ctx.unrecorded.prune(ctx.store);
  if (!cleared) {
    throw new ServerFsError("WORKDIR_RECOVERY_REQUIRED", "the workdir slot has an unresolved active-slot guard");
  }
}

/** The maintenance sweep's gone verdicts; acted on here, where every guard write happens. */
export function providersGone(ctx: ServiceContext, findings: SweepFinding[]): void {
  if (ctx.closing) return;
  for (const finding of findings) {
    // a store that still cannot take the write leaves the finding for the next pass
    ctx.unrecorded.attempt(finding.taskId, () => settleFinding({ ...ctx.recoveryScope, isLive: (id) => ctx.runs.has(id) }, finding));
    ctx.waiters.notify(finding.taskId);
  }
  ctx.unrecorded.prune(ctx.store);
}

export function recoveryList(ctx: ServiceContext): ResultInput<"recovery.list"> {
  return { guards: listGuards(ctx.lockDir, ctx.store) };
}

export function recoveryClear(ctx: ServiceContext, p: Params<"recovery.clear">): ResultInput<"recovery.clear"> {
  if (p.confirm !== true) throw new ServerFsError("INVALID_REQUEST", "confirm must be true");
  return clearGuard(ctx.recoveryScope, p.slot);
}
