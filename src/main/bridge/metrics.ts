/**
 * The Bridge's counters since it started (docs/console.md#metrics), counted from its own audit lines so
 * that what the log says and what the metrics say cannot drift: `task_started` (provider starts by
 * runtime), `task_ended` as `failed` or `interrupted` (failures by runtime and error code), an answered
 * approval's `wait_ms` (the approval wait histogram) and every `recovery.*` line (by event). What the
 * database holds (tasks, open requests, events appended) and the guards are read at `metrics.read` time
 * instead. Offers `BridgeMetrics`.
 */
import type { AuditFields, AuditLog } from "../../shared/audit.ts";
import { Histogram } from "../prometheus-text.ts";

/** Upper bounds of the approval wait histogram: a second to a day, where people answer. */
const WAIT_BUCKETS_SECONDS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400] as const;

const FAILED = new Set(["failed", "interrupted"]);

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

const text = (v: AuditFields[string]) => (typeof v === "string" ? v : "unknown");

export class BridgeMetrics {
  readonly startedAt = new Date().toISOString();
  private readonly starts = new Map<string, number>();
  /** Keyed `runtime\u0000code`. */
  private readonly failures = new Map<string, number>();
  private readonly recoveries = new Map<string, number>();
  private readonly wait = new Histogram(WAIT_BUCKETS_SECONDS);

  constructor(audit: AuditLog) {
    audit.observe((_level, event, fields) => this.count(event, fields));
  }

  private count(event: string, fields: AuditFields): void {
    if (event === "task_started") bump(this.starts, text(fields["runtime"]));
    else if (event === "task_ended" && FAILED.has(text(fields["status"]))) {
      bump(this.failures, `${text(fields["runtime"])}\u0000${text(fields["error_code"])}`);
    } else if (event === "request_answered" && fields["kind"] === "approval" && typeof fields["wait_ms"] === "number") {
      this.wait.observe(fields["wait_ms"] / 1000);
    } else if (event.startsWith("recovery.")) bump(this.recoveries, event.slice("recovery.".length));
  }

  snapshot() {
    return {
      bridge_started_at: this.startedAt,
      provider_starts: [...this.starts].map(([runtime, count]) => ({ runtime, count })),
      provider_failures: [...this.failures].map(([key, count]) => {
        const [runtime, error_code] = key.split("\u0000") as [string, string];
        return { runtime, error_code, count };
      }),
      recoveries: [...this.recoveries].map(([event, count]) => ({ event, count })),
      approval_wait_seconds: this.wait.snapshot(),
    };
  }
}
