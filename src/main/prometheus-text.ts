/**
 * The Prometheus text exposition format 0.0.4, written by hand for both fronts that serve `GET /metrics`:
 * the console (docs/console.md#metrics) and `serverfs mcp --http` (docs/mcp-tools.md#metrics). Every value
 * is a snapshot handed over per scrape, so there is no registry to keep (docs/decisions.md), only
 * `# HELP` / `# TYPE` lines, samples with label values escaped as the format says, and histograms as
 * cumulative `_bucket` / `_sum` / `_count` series.
 *
 * Offers `Labels`, `sample`, `HistogramCounts`, `Histogram`, `histogramSamples`, `Exposition`, `replyExposition`.
 */
import type { ServerResponse } from "node:http";

export type Labels = Record<string, string>;

/** A label value as the text format wants it: backslash, double quote and newline escaped. */
const escapeLabel = (value: string) => value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");

export function sample(name: string, labels: Labels, value: number): string {
  const pairs = Object.entries(labels).map(([k, val]) => `${k}="${escapeLabel(val)}"`);
  return `${name}${pairs.length === 0 ? "" : `{${pairs.join(",")}}`} ${value}`;
}

/** A histogram's counts: `buckets` cumulative (each counts every observation at or under its `le`). */
export interface HistogramCounts {
  buckets: { le: number; count: number }[];
  count: number;
  sum: number;
}

/** Observations counted into fixed upper bounds, as `HistogramCounts` wants them. */
export class Histogram {
  private readonly counts: number[];
  private count = 0;
  private sum = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = bounds.map(() => 0);
  }

  observe(value: number): void {
    this.bounds.forEach((le, i) => {
      if (value <= le) this.counts[i]!++;
    });
    this.count++;
    this.sum += value;
  }

  snapshot(): HistogramCounts {
    return { buckets: this.bounds.map((le, i) => ({ le, count: this.counts[i]! })), count: this.count, sum: this.sum };
  }
}

/** One histogram's series under `labels`: a bucket per bound, `+Inf`, the sum and the count. */
export function histogramSamples(name: string, labels: Labels, h: HistogramCounts): string[] {
  return [
    ...h.buckets.map((b) => sample(`${name}_bucket`, { ...labels, le: String(b.le) }, b.count)),
    sample(`${name}_bucket`, { ...labels, le: "+Inf" }, h.count),
    sample(`${name}_sum`, labels, h.sum),
    sample(`${name}_count`, labels, h.count),
  ];
}

export class Exposition {
  private readonly lines: string[] = [];

  family(name: string, type: "gauge" | "counter" | "histogram", help: string, samples: readonly string[]): void {
    this.lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples);
  }

  text(): string {
    return `${this.lines.join("\n")}\n`;
  }
}

/** The 200 answer of a scrape. */
export function replyExposition(res: ServerResponse, body: string): void {
  res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8", "content-length": String(Buffer.byteLength(body)) });
  res.end(body);
}
