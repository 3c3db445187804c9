/**
 * What reconciliation concludes about one recorded provider (docs/task-model.md#reconciliation), from evidence only:
 * the recorded process group, its leader's start time and the provider mark. Pure and usable from
 * any thread: startup reconciliation (main thread, before the socket), lazy reconciliation (main
 * thread, at write submit) and the periodic sweep (maintenance worker) all decide through here, so
 * the three can never disagree about what a row or a guard proves.
 *
 * Offers: `Classification`, `Verdict`, `Evidence`, `SweepFinding`, `evidenceOfTask`,
 * `evidenceOfGuard`, `goneVerdict`, `checkVerdict`.
 */
import { checkProcessGroup } from "../process-group.ts";
import type { TaskRow } from "../store/index.ts";
import type { Guard } from "./guard-files.ts";

export type Classification = "REATTACHED" | "SESSION_RESUMABLE" | "NOT_RECOVERABLE" | "UNKNOWN";

export interface Verdict {
  status: Classification;
  /** false only when the provider is proven gone; true = alive; null = cannot check. */
  providerActive: boolean | null;
}

/**
 * What the periodic sweep hands the task service: a gone verdict for the task a guard names (`slot`
 * set) or for an active task with no runner and no guard (`slot` null).
 */
export interface SweepFinding {
  slot: number | null;
  taskId: string;
  verdict: Verdict;
}

export interface Evidence {
  pgid: number | null;
  startTime: number | null;
  mark: string | null;
  nativeSessionId: string | null;
  /**
   * The task never left `queued`: a provider is spawned only after the `starting` commit, which
   * sets `started_at` (docs/task-model.md#execution step 1), so a null `started_at` proves no provider ever existed.
   */
  neverSpawned: boolean;
}

export const evidenceOfTask = (t: TaskRow): Evidence => ({
  pgid: t.provider_pgid,
  startTime: t.provider_start_time,
  mark: t.provider_mark,
  nativeSessionId: t.native_session_id,
  neverSpawned: t.started_at === null,
});

/** A guard whose task row is gone (row G2): only its own group fields speak. */
export const evidenceOfGuard = (g: Guard): Evidence => ({
  pgid: g.provider_pgid,
  startTime: g.provider_start_time,
  mark: g.provider_mark,
  nativeSessionId: g.native_session_id,
  neverSpawned: false,
});

/** Proven gone: a stored native session leaves a later explicit continuation possible. */
export const goneVerdict = (e: Evidence): Verdict => ({
  status: e.nativeSessionId ? "SESSION_RESUMABLE" : "NOT_RECOVERABLE",
  providerActive: false,
});

/** The docs/task-model.md#process-group-proof group check alone, no signals (lazy and periodic reconciliation, rows T1, T2, T5, T6). */
export function checkVerdict(e: Evidence): Verdict {
  if (e.neverSpawned) return goneVerdict(e);
  const check = checkProcessGroup(e.pgid, e.startTime, e.mark);
  if (check === "gone") return goneVerdict(e);
  return { status: "UNKNOWN", providerActive: check === "alive" ? true : null };
}
