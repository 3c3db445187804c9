/**
 * The maintenance worker (bridge.md §1): every `maintenance_interval_seconds` it runs retention GC
 * and the deadline and interaction-expiry sweeps — the backstop behind the task service's own
 * timers. It deletes GC'd rows and spool files itself; anything that touches a provider, a lease or
 * a guard it hands to the task service through the proxied host, which acts.
 */
import { exposeApi } from "../shared/comlink-worker.ts";
import { collectGarbage, type GcResult } from "../shared/retention.ts";
import { Store } from "../shared/store/index.ts";
import { nowIso } from "../shared/time.ts";

export interface MaintenanceHost {
  /** Active tasks whose deadline has passed. */
  deadlinesPassed(taskIds: string[]): void;
  /** Pending requests whose `expires_at` has been reached. */
  requestsExpired(requests: { taskId: string; requestId: string }[]): void;
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

function gc(): GcResult {
  if (!store || !settings) return { deleted: 0, skipped: 0 };
  return collectGarbage({ store, stateDir: settings.stateDir, lockDir: settings.lockDir, retentionHours: settings.retentionHours });
}

function sweep(): void {
  if (!store || !host) return;
  const now = nowIso();
  const late = store
    .listActive()
    .filter((t) => t.deadline_at !== null && t.deadline_at <= now)
    .map((t) => t.task_id);
  if (late.length > 0) host.deadlinesPassed(late);
  const expired = store.listExpiredPending(now).map((r) => ({ taskId: r.task_id, requestId: r.request_id }));
  if (expired.length > 0) host.requestsExpired(expired);
}

const api = {
  init(s: MaintenanceSettings): void {
    settings = s;
    store = Store.open(s.stateDir);
  },
  /** Starts the periodic pass; the host receives what the sweeps find. */
  start(h: MaintenanceHost): void {
    host = h;
    timer = setInterval(() => {
      try {
        gc();
        sweep();
      } catch {
        // a failed pass is retried at the next interval; the task service's timers still run
      }
    }, settings!.intervalSeconds * 1000);
  },
  gc,
  stop(): void {
    if (timer) clearInterval(timer);
    timer = null;
    store?.close();
    store = null;
  },
};

export type MaintenanceApi = typeof api;

exposeApi(api);
