/**
 * `GET /metrics` on `serverfs mcp --http`'s listener (docs/mcp-tools.md#metrics): this process's tool calls
 * since it started, counted from the `tool_call` audit line `callTool` writes for every call (server.ts),
 * so the log and the metrics cannot disagree and no call is timed twice — the same way the Bridge counts
 * (bridge/metrics.ts). Labels are bounded: the tool is a registered tool's name (an unknown tool never
 * reaches `callTool`), the outcome `ok` or a listed error code; no path, argument or content.
 * Offers `McpMetrics`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AuditFields, AuditLog } from "../../shared/audit.ts";
import { knownCode } from "../../shared/errors.ts";
import { reply } from "../http-gate.ts";
import { Exposition, Histogram, histogramSamples, replyExposition, sample } from "../prometheus-text.ts";

/** Upper bounds of the call duration histogram: a stat takes a millisecond, a search or an Agent wait minutes. */
const DURATION_BUCKETS_SECONDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300] as const;

const text = (v: AuditFields[string]) => (typeof v === "string" ? v : "unknown");

export class McpMetrics {
  /** Keyed `tool\u0000outcome`. */
  private readonly calls = new Map<string, number>();
  private readonly durations = new Map<string, Histogram>();

  /** `sessions`: the Streamable HTTP sessions open now. */
  constructor(
    audit: AuditLog,
    private readonly sessions: () => number,
  ) {
    audit.observe((_level, event, fields) => {
      if (event === "tool_call") this.count(fields);
    });
  }

  private count(fields: AuditFields): void {
    const tool = text(fields["tool"]);
    // a code a newer Bridge relayed and this build does not list counts as what RelayedError makes it
    const outcome = fields["success"] === true ? "ok" : knownCode(text(fields["error_code"]));
    const key = `${tool}\u0000${outcome}`;
    this.calls.set(key, (this.calls.get(key) ?? 0) + 1);
    const histogram = this.durations.get(tool) ?? new Histogram(DURATION_BUCKETS_SECONDS);
    this.durations.set(tool, histogram);
    if (typeof fields["duration_ms"] === "number") histogram.observe(fields["duration_ms"] / 1000);
  }

  /** Past the listener's gates: GET answers the exposition, any other method 405. */
  serve(req: IncomingMessage, res: ServerResponse): void {
    if (req.method === "GET") replyExposition(res, this.exposition());
    else reply(res, 405, "method not allowed", { allow: "GET" });
  }

  private exposition(): string {
    const out = new Exposition();
    out.family(
      "serverfs_mcp_tool_calls_total",
      "counter",
      "Tool calls this serverfs mcp process answered since it started, by tool and outcome (ok or the error code).",
      [...this.calls.keys()].sort().map((key) => {
        const [tool, outcome] = key.split("\u0000") as [string, string];
        return sample("serverfs_mcp_tool_calls_total", { tool, outcome }, this.calls.get(key)!);
      }),
    );
    out.family(
      "serverfs_mcp_tool_call_duration_seconds",
      "histogram",
      "How long this process's tool calls took, by tool, since it started.",
      [...this.durations.keys()]
        .sort()
        .flatMap((tool) => histogramSamples("serverfs_mcp_tool_call_duration_seconds", { tool }, this.durations.get(tool)!.snapshot())),
    );
    out.family("serverfs_mcp_http_sessions", "gauge", "Streamable HTTP sessions open on this process now.", [
      sample("serverfs_mcp_http_sessions", {}, this.sessions()),
    ]);
    return out.text();
  }
}
