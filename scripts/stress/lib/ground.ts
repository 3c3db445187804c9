/**
 * What every stress ground shares (docs/reliability.md "The stress grounds"): its size flags, the tally
 * of invariant violations by kind, and the one JSON document it prints on stdout. Progress goes to
 * stderr. The exit code is 1 when any violation was seen, 2 for a bad flag, else 0.
 */

/**
 * Reads `--name N` flags for the keys of `defaults` (non-negative integers); anything else exits 2.
 * With `operands` (its usage text), arguments that are not flags are collected in `rest` instead.
 */
export function sizeFlags<T extends Record<string, number>>(ground: string, defaults: T, operands?: string): T & { rest: string[] } {
  const out: Record<string, number> = { ...defaults };
  const rest: string[] = [];
  const args = process.argv.slice(2);
  for (let i = 0; i < args.length; i += 2) {
    if (operands !== undefined && !args[i]!.startsWith("--")) {
      rest.push(args[i]!);
      i--;
      continue;
    }
    const name = args[i]!.replace(/^--/, "");
    const value = Number(args[i + 1]);
    if (!args[i]!.startsWith("--") || !(name in defaults) || !Number.isSafeInteger(value) || value < 0) {
      const usage = Object.entries(defaults)
        .map(([k, v]) => `[--${k} N (${v})]`)
        .join(" ");
      process.stderr.write(`usage: bun run scripts/stress/${ground}.ts ${usage}${operands === undefined ? "" : ` ${operands}`}\n`);
      process.exit(2);
    }
    out[name] = value;
  }
  return { ...(out as T), rest };
}

/** Invariant violations by kind, with the first few details of each for the report. */
export class Violations {
  private readonly kinds = new Map<string, { count: number; examples: string[] }>();

  add(kind: string, detail: string): void {
    const k = this.kinds.get(kind) ?? { count: 0, examples: [] };
    k.count++;
    if (k.examples.length < 5) k.examples.push(detail);
    this.kinds.set(kind, k);
    process.stderr.write(`VIOLATION ${kind}: ${detail}\n`);
  }

  get total(): number {
    let n = 0;
    for (const k of this.kinds.values()) n += k.count;
    return n;
  }

  byKind(): Record<string, number> {
    return Object.fromEntries([...this.kinds].map(([kind, k]) => [kind, k.count]));
  }

  examples(): Record<string, string[]> {
    return Object.fromEntries([...this.kinds].map(([kind, k]) => [kind, k.examples]));
  }
}

export const progress = (ground: string, line: string): void => {
  process.stderr.write(`stress:${ground}: ${line}\n`);
};

/** Prints the ground's figures with its violations and exits (1 if any). */
export function finish(figures: Record<string, unknown>, violations: Violations): never {
  const doc = { ...figures, violations: violations.total, violations_by_kind: violations.byKind(), violation_examples: violations.examples() };
  process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
  process.exit(violations.total === 0 ? 0 : 1);
}

/** A small seeded generator (mulberry32), so a run is reproduced by its `--seed`. */
export function seeded(seed: number): { next(): number; int(lo: number, hi: number): number; pick<T>(xs: readonly T[]): T } {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: (xs) => xs[Math.floor(next() * xs.length)]!,
  };
}
