/**
 * A `/metrics` scrape read by a parser of the Prometheus text format (parse-prometheus-text-format, not
 * ServerFS's own writer): what the parser answers is checked by a valibot schema, so a family, a type, a
 * label set or a value the format does not allow fails the test.
 *
 * The parser folds every series of a histogram into one, keeping only the `le` label and dropping a
 * labelled `_sum` and `_count` (yunyu/parse-prometheus-text-format#13, open since 2020; no JavaScript
 * parser of the format does better). So a histogram's series are read from a second parse of the same
 * text with its `# TYPE … histogram` line said `untyped`, where `_bucket`, `_sum` and `_count` are plain
 * families with all their labels; the first parse still checks the histogram's type and help.
 */
import { expect } from "bun:test";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import * as v from "valibot";

const Labels = v.optional(v.record(v.string(), v.string()), {});
const Sample = v.object({
  labels: Labels,
  value: v.optional(v.string()),
  buckets: v.optional(v.record(v.string(), v.string())),
  count: v.optional(v.string()),
  sum: v.optional(v.string()),
});
const Family = v.object({
  name: v.string(),
  help: v.string(),
  type: v.picklist(["COUNTER", "GAUGE", "HISTOGRAM", "SUMMARY", "UNTYPED"]),
  metrics: v.array(Sample),
});

export type Family = v.InferOutput<typeof Family>;
type Labels = Record<string, string>;

/** A number of the format: a float, `+Inf`, `-Inf` or `NaN`. */
function numberOf(text: string | undefined): number {
  expect(text).toMatch(/^([+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]Inf|NaN)$/);
  return Number(text!.replace("Inf", "Infinity"));
}

const sameLabels = (a: Labels, b: Labels) => Object.keys(a).length === Object.keys(b).length && Object.entries(b).every(([k, val]) => a[k] === val);

const parse = (text: string) => v.parse(v.array(Family), parsePrometheusTextFormat(text));
const withoutLe = ({ le: _, ...rest }: Labels) => rest;

export class Scrape {
  readonly families: ReadonlyMap<string, Family>;
  /** Every family with histograms untyped: their `_bucket`, `_sum` and `_count` series whole. */
  private readonly series: ReadonlyMap<string, Family>;

  constructor(readonly text: string) {
    const parsed = parse(text);
    this.families = new Map(parsed.map((f) => [f.name, f]));
    // a family named twice would be two families to the parser and one series set to Prometheus
    expect(this.families.size).toBe(parsed.length);
    // there a histogram with several label sets is `_bucket`, `_sum`, `_count` again for each: one family per name
    const series = new Map<string, Family>();
    for (const f of parse(text.replace(/^# TYPE (\S+) histogram$/gm, "# TYPE $1 untyped"))) {
      const seen = series.get(f.name);
      series.set(f.name, seen === undefined ? f : { ...seen, metrics: [...seen.metrics, ...f.metrics] });
    }
    this.series = series;
    // the parser is lenient with a broken line (an unclosed quote swallows the rest): every sample must still be NAME[{labels}] NUMBER
    for (const f of series.values()) for (const m of f.metrics) numberOf(m.value);
  }

  /** The family `name`, which must exist, have a HELP line and be of `type`. */
  family(name: string, type: Family["type"]): Family {
    const family = this.families.get(name);
    if (family === undefined) throw new Error(`no family ${name} in the scrape:\n${this.text}`);
    expect(family.type).toBe(type);
    expect(family.help).not.toBe("");
    return family;
  }

  /** The value of a series with exactly `labels` (a histogram's `_sum`, `_count` or `_bucket` too); undefined when there is none. */
  value(name: string, labels: Labels = {}): number | undefined {
    const series = this.series.get(name)?.metrics.find((m) => sameLabels(m.labels, labels));
    return series === undefined ? undefined : numberOf(series.value);
  }

  /** The label sets (`le` aside) a histogram has series for, in the scrape's order. */
  histogramLabels(name: string): Labels[] {
    this.family(name, "HISTOGRAM");
    const sets = (this.series.get(`${name}_bucket`)?.metrics ?? []).map((m) => withoutLe(m.labels));
    return sets.filter((set, i) => sets.findIndex((other) => sameLabels(other, set)) === i);
  }

  /** A histogram's series with exactly `labels` (besides `le`): buckets by bound, count and sum. */
  histogram(name: string, labels: Labels = {}): { buckets: Map<string, number>; count: number; sum: number } | undefined {
    this.family(name, "HISTOGRAM");
    const bucketSeries = (this.series.get(`${name}_bucket`)?.metrics ?? []).filter((m) => sameLabels(withoutLe(m.labels), labels));
    if (bucketSeries.length === 0) return undefined;
    const buckets = new Map(bucketSeries.map((m) => [m.labels["le"]!, numberOf(m.value)]));
    // cumulative, ending in +Inf equal to the count
    const counts = [...buckets].sort(([a], [b]) => numberOf(a) - numberOf(b)).map(([, n]) => n);
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    const count = this.value(`${name}_count`, labels);
    const sum = this.value(`${name}_sum`, labels);
    if (count === undefined || sum === undefined) throw new Error(`${name} has buckets but no _count or _sum for ${JSON.stringify(labels)}`);
    expect(buckets.get("+Inf")).toBe(count);
    return { buckets, count, sum };
  }
}
