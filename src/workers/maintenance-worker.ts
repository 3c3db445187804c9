/**
 * The maintenance worker (docs/task-model.md#threads): every `maintenance_interval_seconds` it runs retention GC,
 * the deadline and interaction-expiry sweeps (the backstop behind the task service's own timers: the
 * sweep hands every recorded time to the task service, which alone knows which are due, `TimesSnapshot`)
 * and the periodic reconciliation sweep (docs/reliability.md#lazy-write-submit-and-periodic-maintenance). It deletes GC'd rows and spool files itself;
 * anything that touches a provider, a lease or a guard it hands to the task service through the
 * proxied host, which acts. Each pass first checks that the database's path still names the file open
 * here (docs/reliability.md#the-state-database-stays-the-one-open); when not, it only tells the host.
 */
import { exposeApi } from "../shared/comlink-worker.ts";
import { ServerFsError } from "../shared/errors.ts";
import { guardedSlots, readGuard } from "../shared/leases/guard-files.ts";
import { checkVerdict, evidenceOfGuard, evidenceOfTask, type SweepFinding } from "../shared/leases/reconcile-verdict.ts";
import { releaseMemory } from "../shared/release-memory.ts";
import { collectGarbage, type GcResult } from "../shared/retention.ts";
import { Store } from "../shared/store/index.ts";

/**
 * Every active task's deadline and every pending request's expiry, as recorded. Whether one has passed
 * is the task service's to say: it counts them on the monotonic clock from when it set or first saw
 * them (docs/task-model.md#time-and-clocks), which a wall-clock comparison here could not.
 */
export interface TimesSnapshot {
  deadlines: { taskId: string; deadlineAt: string }[];
  expiries: { taskId: string; requestId: string; expiresAt: string }[];
}

export interface MaintenanceHost {
  /** The deadline and expiry sweep's snapshot, for the task service to act on what is due. */
  timesToCheck(times: TimesSnapshot): void;
  /** The tasks with a live runner in the Bridge; the reconciliation sweep leaves those to it. */
  liveTaskIds(): string[] | Promise<string[]>;
  /** Proven-gone providers of guards and runner-less active tasks, for the task service to act on. */
  providersGone(findings: SweepFinding[]): void;
  /** The database's path no longer names the file open here: the pass did nothing else. */
  stateLost(): void;
  /** A pass ran to its end: the Bridge logs it, so an operator (and a test) can see the passes happen. */
  passed(report: PassReport): void;
  /** A pass stopped at `step`; only the error's type crosses, never its message (it may name a path). */
  passFailed(failure: PassFailure): void;
}

export interface PassReport {
  gc_deleted: number;
  gc_skipped: number;
  /** Gone verdicts handed to the task service. */
  findings: number;
  duration_ms: number;
}

export type PassStep = "gc" | "timers" | "providers";

export interface PassFailure {
  step: PassStep;
  error_type: string;
  /** Set when the error is one of ours (a store failure is BRIDGE_STORAGE_ERROR). */
  error_code?: string;
}

export interface MaintenanceSettings {
  stateDir: string;
  lockDir: string;
  retentionHours: number;
  intervalSeconds: number;
}

let store: Store | null = null;
let settings: MaintenanceSettings | null = null;
let timer: ReturnType<typeof setInterval> | null = null;
let host: MaintenanceHost | null = null;
let passRunning = false;

function gc(): GcResult {
  if (!store || !settings) return { deleted: 0, skipped: 0 };
  return collectGarbage({ store, stateDir: settings.stateDir, lockDir: settings.lockDir, retentionHours: settings.retentionHours });
}

function sweepTimers(db: Store, h: MaintenanceHost): void {
  const deadlines = db.listActive().flatMap((t) => (t.deadline_at === null ? [] : [{ taskId: t.task_id, deadlineAt: t.deadline_at }]));
  const expiries = db
    .listPendingWithExpiry()
    .flatMap((r) => (r.expires_at === null ? [] : [{ taskId: r.task_id, requestId: r.request_id, expiresAt: r.expires_at }]));
  h.timesToCheck({ deadlines, expiries });
}

/**
 * docs/reliability.md#lazy-write-submit-and-periodic-maintenance periodic: every guard and every active task without a live runner gets the group check (no
 * signals). Only gone verdicts change anything, so only those are handed over; an invalid guard,
 * an alive or an uncheckable provider stays as it is.
 */
async function sweepProviders(db: Store, lockDir: string, h: MaintenanceHost): Promise<number> {
  const live = new Set(await h.liveTaskIds());
  const findings: SweepFinding[] = [];
  const guarded = new Set<string>();
  for (const slot of guardedSlots(lockDir)) {
    const read = readGuard(lockDir, slot);
    if (read.kind !== "valid") continue;
    const g = read.guard;
    guarded.add(g.task_id);
    if (live.has(g.task_id)) continue;
    const row = db.getTask(g.task_id);
    const verdict = checkVerdict(row ? evidenceOfTask(row) : evidenceOfGuard(g));
    if (verdict.providerActive === false) findings.push({ slot, taskId: g.task_id, verdict });
  }
  for (const task of db.listActive()) {
    if (live.has(task.task_id) || guarded.has(task.task_id)) continue;
    const verdict = checkVerdict(evidenceOfTask(task));
    if (verdict.providerActive === false) findings.push({ slot: null, taskId: task.task_id, verdict });
  }
  if (findings.length > 0) h.providersGone(findings);
  return findings.length;
}

/**
 * One maintenance pass; a pass still running when the next is due makes that one skip. A failed pass
 * is retried at the next interval (the task service's own timers still run meanwhile); the host hears
 * of every pass either way, naming the step that failed.
 */
async function pass(): Promise<void> {
  const h = host;
  if (passRunning || !store || !settings || !h) return;
  passRunning = true;
  const began = performance.now();
  let step: PassStep = "gc";
  try {
    // nothing is collected or swept in a file that vanishes at the next start
    if (store.fileLost()) {
      h.stateLost();
      return;
    }
    const collected = gc();
    step = "timers";
    sweepTimers(store, h);
    step = "providers";
    const findings = await sweepProviders(store, settings.lockDir, h);
    h.passed({ gc_deleted: collected.deleted, gc_skipped: collected.skipped, findings, duration_ms: Math.round(performance.now() - began) });
  } catch (e) {
    h.passFailed({ step, error_type: e instanceof Error ? e.name : typeof e, error_code: e instanceof ServerFsError ? e.code : undefined });
  } finally {
    passRunning = false;
  }
}

const api = {
  init(s: MaintenanceSettings): void {
    settings = s;
    store = Store.open(s.stateDir);
  },
  /** Starts the periodic pass; the host receives what the sweeps find. */
  start(h: MaintenanceHost): void {
    host = h;
    timer = setInterval(() => void pass(), settings!.intervalSeconds * 1000);
  },
  gc,
  /** The Bridge is idle: the GC passes' rows are garbage by now (src/shared/release-memory.ts). */
  releaseMemory(): void {
    releaseMemory(store);
  },
  stop(): void {
    if (timer) clearInterval(timer);
    timer = null;
    host = null;
    store?.close();
    store = null;
  },
};

export type MaintenanceApi = typeof api;

exposeApi(api);
