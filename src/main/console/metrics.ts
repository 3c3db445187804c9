/**
 * `GET /metrics` (docs/console.md#metrics): the Bridge's `metrics.read` answer in the Prometheus text
 * exposition format 0.0.4, written by the small writer both fronts share (prometheus-text.ts): every value
 * is a snapshot the Bridge hands over per scrape.
 * A Bridge that does not answer is `serverfs_bridge_up 0` and nothing else. Offers `consoleMetrics`.
 */
import type { BridgeClient } from "../../shared/bridge-protocol/client.ts";
import type { Result } from "../../shared/bridge-protocol/results.ts";
import { isServerFsError } from "../../shared/errors.ts";
import { TASK_STATUSES } from "../../shared/store/task-states.ts";
import { Exposition, histogramSamples, sample } from "../prometheus-text.ts";

export async function consoleMetrics(client: BridgeClient): Promise<string> {
  const out = new Exposition();
  let m: Result<"metrics.read">;
  try {
    m = await client.call("metrics.read", {});
  } catch (e) {
    if (!isServerFsError(e)) throw e;
    out.family("serverfs_bridge_up", "gauge", "Whether the Agent Bridge answered the console.", [sample("serverfs_bridge_up", {}, 0)]);
    return out.text();
  }
  out.family("serverfs_bridge_up", "gauge", "Whether the Agent Bridge answered the console.", [sample("serverfs_bridge_up", {}, 1)]);
  // every status of every runtime seen, zeros included, so a series does not vanish when its last task moves on
  const runtimes = [...new Set([...m.tasks.map((t) => t.runtime), ...m.provider_starts.map((s) => s.runtime)])].sort();
  const taskCount = (status: string, runtime: string) => m.tasks.find((t) => t.status === status && t.runtime === runtime)?.count ?? 0;
  out.family(
    "serverfs_tasks",
    "gauge",
    "Tasks the Bridge's database holds, by status and runtime (ended tasks until retention removes them).",
    runtimes.flatMap((runtime) => TASK_STATUSES.map((status) => sample("serverfs_tasks", { status, runtime }, taskCount(status, runtime)))),
  );
  const pending = (kind: string) => m.pending_requests.find((p) => p.kind === kind)?.count ?? 0;
  out.family(
    "serverfs_pending_requests",
    "gauge",
    "Approvals and questions waiting for an answer.",
    ["approval", "question"].map((kind) => sample("serverfs_pending_requests", { kind }, pending(kind))),
  );
  out.family(
    "serverfs_approval_wait_seconds",
    "histogram",
    "How long answered approvals waited for their answer, since the Bridge started.",
    histogramSamples("serverfs_approval_wait_seconds", {}, m.approval_wait_seconds),
  );
  out.family(
    "serverfs_provider_starts_total",
    "counter",
    "Provider runs started, by runtime, since the Bridge started.",
    m.provider_starts.map((s) => sample("serverfs_provider_starts_total", { runtime: s.runtime }, s.count)),
  );
  out.family(
    "serverfs_provider_failures_total",
    "counter",
    "Tasks that ended failed or interrupted, by runtime and error code, since the Bridge started.",
    m.provider_failures.map((f) => sample("serverfs_provider_failures_total", { runtime: f.runtime, error_code: f.error_code }, f.count)),
  );
  out.family("serverfs_events_appended_total", "counter", "Task events ever appended to the Bridge's database.", [
    sample("serverfs_events_appended_total", {}, m.events_appended),
  ]);
  out.family("serverfs_guards", "gauge", "Active-slot guards in the lock directory.", [sample("serverfs_guards", {}, m.guards)]);
  out.family(
    "serverfs_recoveries_total",
    "counter",
    "Reconciliation outcomes (guard_removed, guard_kept, orphan_terminated, operator_cleared) since the Bridge started.",
    m.recoveries.map((r) => sample("serverfs_recoveries_total", { event: r.event }, r.count)),
  );
  return out.text();
}
