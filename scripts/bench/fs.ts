#!/usr/bin/env bun
/**
 * The Workspace Access Plane benchmark (docs/performance.md): ServerFS against the reference
 * `@modelcontextprotocol/server-filesystem`, against the command-line tools (`find`, `rg`) and against
 * a minimal compiled MCP server, side by side in one process tree, on generated trees of 10,000,
 * 50,000 and 200,000 files (cached under the temp dir between runs). The servers are driven by the
 * SDK Client over stdio. Progress goes to stderr; stdout gets one JSON document with medians, ratios
 * (each with its aim and whether it was met) and the growth of each figure with the tree's size.
 *
 *   bun run bench            (package.json)   or   bun run scripts/bench/fs.ts
 */
import { readFileSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { BUN, CLI, REPO_ROOT, tempDir, writeConfig } from "../../test/helpers/workspace.ts";
import { firstLine, interleave, median, ms, runCommand, timed } from "./lib/measure.ts";
import { openSession, type ServerLaunch, type StdioSession } from "./lib/stdio-session.ts";
import { cachedTree, FIND_PATTERN, type GeneratedTree, SEARCH_NEEDLE } from "./lib/tree.ts";

/** Tree sizes; the aims are judged on the middle one, the 50,000 files. */
const SIZES = [10_000, 50_000, 200_000] as const;
const HEADLINE = 50_000;
/** Measured repetitions per figure (each after one unmeasured warm-up; reads after 20). */
const RUNS = { coldStart: 9, readCalls: 300, readWarmups: 20, reference: 5, walk: { 10000: 9, 50000: 9, 200000: 5 } };
/** The measured part of the run (compilation included, tree generation not) must end within this. */
const BUDGET_MS = 300_000;
const CACHE_DIR = process.env["SERVERFS_BENCH_CACHE"] ?? join(tmpdir(), "serverfs-bench-trees");
/**
 * Results, walk bound and search deadline raised from their defaults (100, 200,000, 15 s) so that
 * find and search return every match and walk the whole tree, as the reference server and the
 * command-line tools do; the 200,000-file tree holds 204,440 entries.
 */
const LIMITS = { max_search_results: 10_000, max_walk_entries: 1_000_000, search_timeout_seconds: 120 };
const CALL_LIMIT = LIMITS.max_search_results;

const AIMS = {
  cold_start_compiled_vs_minimal: 1.3,
  cold_start_compiled_vs_reference: 0.45,
  read_text_file_vs_reference: 0.7,
  find_vs_reference: 0.05,
  find_vs_find1: 1.0,
  search_vs_rg: 0.8,
  search_folded_vs_rg_i: 1.0,
};
/** Per-file cost at 200,000 files over that at 50,000 above which growth is not called linear. */
const LINEAR_TOLERANCE = 1.25;

const REFERENCE_DIR = join(REPO_ROOT, "node_modules", "@modelcontextprotocol", "server-filesystem");
const MINIMAL_SERVER = join(REPO_ROOT, "scripts", "bench", "lib", "minimal-mcp-server.ts");

const log = (line: string) => process.stderr.write(`bench: ${line}\n`);
const alias = (files: number) => `t${files / 1000}k`;

interface Figure {
  median_ms: number;
  min_ms: number;
  max_ms: number;
  runs: number;
}
type Figures = Record<string, Figure>;

const figure = (samples: readonly number[]): Figure => ({
  median_ms: ms(median(samples)),
  min_ms: ms(Math.min(...samples)),
  max_ms: ms(Math.max(...samples)),
  runs: samples.length,
});

const figures = (samples: Record<string, number[]>): Figures => Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, figure(v)]));

/** ServerFS median ÷ the other's; a peer that is not installed gives no value and says so. */
function ratio(ours: Figure, theirs: Figure | undefined, aim: number | null, peer = "the peer") {
  if (theirs === undefined) return { value: null, aim, met: null, peer_missing: peer };
  const value = Math.round((ours.median_ms / theirs.median_ms) * 1000) / 1000;
  return { value, aim, met: aim === null ? null : value <= aim };
}

function expectCount(what: string, got: number, want: number): void {
  if (got !== want) throw new Error(`${what}: ${got} results, expected ${want}`);
}

const textOf = (r: { content: unknown[] }) => (r.content[0] as { text?: string } | undefined)?.text ?? "";
const structuredOf = <T>(r: { structuredContent?: unknown }) => r.structuredContent as T;

/**
 * `bun build` of `entry` with the flags of ServerFS's own build line (package.json: `--compile`, `--bytecode`, …),
 * so the floor is built the way ServerFS is; that whole build line (its worker entries included) when `entry` is null.
 */
function compile(outfile: string, entry: string | null): number {
  const build = (JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { scripts: { build: string } }).scripts.build;
  const line = build
    .replace(/^bun /, "")
    .replace(/--outfile \S+/, "")
    .trim()
    .split(/\s+/);
  const args = entry === null ? line : ["build", ...line.filter((t) => t.startsWith("--") && t !== "--root"), entry];
  const started = performance.now();
  const r = Bun.spawnSync([BUN, ...args, "--outfile", outfile], { cwd: REPO_ROOT, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`bun build --compile failed:\n${r.stderr.toString("utf8")}`);
  return performance.now() - started;
}

async function coldStart(launches: ServerLaunch[]) {
  log(`cold start: ${launches.length} servers × ${RUNS.coldStart} runs`);
  const contenders = Object.fromEntries(
    launches.map((l) => [
      l.label,
      async () => {
        const s = await openSession(l);
        await s.close();
        return s.startupMs;
      },
    ]),
  );
  return figures(await interleave(contenders, RUNS.coldStart));
}

async function perCallRead(ours: StdioSession, theirs: StdioSession, tree: GeneratedTree) {
  log(`read_text_file: ${RUNS.readCalls} calls each`);
  const want = readFileSync(join(tree.root, tree.smallFile), "utf8");
  const oursArgs = { workdir: alias(tree.files), path: tree.smallFile };
  const theirsArgs = { path: join(tree.root, tree.smallFile) };
  if (structuredOf<{ content: string }>(await ours.call("read_text_file", oursArgs)).content !== want) {
    throw new Error("serverfs: read_text_file returned other content");
  }
  if (structuredOf<{ content: string }>(await theirs.call("read_text_file", theirsArgs)).content !== want) {
    throw new Error("reference: read_text_file returned other content");
  }
  const samples = await interleave(
    {
      serverfs: async () => (await timed(() => ours.call("read_text_file", oursArgs))).ms,
      reference: async () => (await timed(() => theirs.call("read_text_file", theirsArgs))).ms,
    },
    RUNS.readCalls,
    RUNS.readWarmups,
  );
  return figures(samples);
}

/** A ServerFS tool call that must return `want` matches, untruncated; its elapsed milliseconds. */
async function serverfsCall(ours: StdioSession, tool: string, args: Record<string, unknown>, want: number): Promise<number> {
  const r = await timed(() => ours.call(tool, { limit: CALL_LIMIT, ...args }));
  const s = structuredOf<{ returned: number; truncated: boolean }>(r.value);
  expectCount(`serverfs ${tool}`, s.truncated ? -1 : s.returned, want);
  return r.ms;
}

/** A command that must print `want` lines; its elapsed milliseconds. */
async function commandCall(name: string, argv: string[], want: number): Promise<number> {
  const r = await runCommand(argv);
  expectCount(name, r.lines, want);
  return r.ms;
}

async function findVsReference(ours: StdioSession, theirs: StdioSession, tree: GeneratedTree) {
  log(`find vs the reference server: ${RUNS.reference} runs each`);
  const samples = await interleave(
    {
      serverfs: () => serverfsCall(ours, "find_files", { workdir: alias(tree.files), pattern: FIND_PATTERN }, tree.findMatches),
      reference: async () => {
        const r = await timed(() => theirs.call("search_files", { path: tree.root, pattern: `**/${FIND_PATTERN}` }));
        expectCount("reference search_files", textOf(r.value).split("\n").length, tree.findMatches);
        return r.ms;
      },
    },
    RUNS.reference,
  );
  return figures(samples);
}

/** find, search and case-folded search on one tree, each against its command-line peer. */
async function walks(ours: StdioSession, tree: GeneratedTree, rg: boolean) {
  const runs = RUNS.walk[tree.files as (typeof SIZES)[number]];
  const workdir = alias(tree.files);
  log(`${tree.files} files: find, search, case-folded search, ${runs} runs each`);
  const find = figures(
    await interleave(
      {
        serverfs: () => serverfsCall(ours, "find_files", { workdir, pattern: FIND_PATTERN }, tree.findMatches),
        find1: () => commandCall("find(1)", ["find", tree.root, "-type", "f", "-name", FIND_PATTERN], tree.findMatches),
      },
      runs,
    ),
  );
  const rgCall = (flags: string[]) => () => commandCall("rg", ["rg", ...flags, "-F", "-n", "--no-heading", "--", SEARCH_NEEDLE, tree.root], tree.searchHits);
  const search = figures(
    await interleave(
      {
        serverfs: () => serverfsCall(ours, "search_text", { workdir, query: SEARCH_NEEDLE }, tree.searchHits),
        ...(rg ? { rg: rgCall([]) } : {}),
      },
      runs,
    ),
  );
  const folded = figures(
    await interleave(
      {
        serverfs: () => serverfsCall(ours, "search_text", { workdir, query: SEARCH_NEEDLE, case_sensitive: false }, tree.searchHits),
        ...(rg ? { rg_i: rgCall(["-i"]) } : {}),
      },
      runs,
    ),
  );
  return { find, search, folded };
}

type Walks = Awaited<ReturnType<typeof walks>>;

function walkRatios(w: Walks) {
  return {
    find_vs_find1: ratio(w.find["serverfs"]!, w.find["find1"], AIMS.find_vs_find1),
    search_vs_rg: ratio(w.search["serverfs"]!, w.search["rg"], AIMS.search_vs_rg, "rg"),
    search_folded_vs_rg_i: ratio(w.folded["serverfs"]!, w.folded["rg_i"], AIMS.search_folded_vs_rg_i, "rg"),
  };
}

/**
 * How one contender's median grows with the file count: the least-squares slope (µs per file) and
 * intercept, r², the cost per file at each size, and whether growth is linear: the per-file cost at
 * the largest tree at most LINEAR_TOLERANCE × the headline tree's.
 */
function growth(points: { files: number; ms: number }[]) {
  const n = points.length;
  const mx = points.reduce((s, p) => s + p.files, 0) / n;
  const my = points.reduce((s, p) => s + p.ms, 0) / n;
  const sxy = points.reduce((s, p) => s + (p.files - mx) * (p.ms - my), 0);
  const sxx = points.reduce((s, p) => s + (p.files - mx) ** 2, 0);
  const syy = points.reduce((s, p) => s + (p.ms - my) ** 2, 0);
  const slope = sxy / sxx;
  const perFile = Object.fromEntries(points.map((p) => [p.files, Math.round((p.ms / p.files) * 1e6) / 1000]));
  const largest = points[n - 1]!;
  const headline = points.find((p) => p.files === HEADLINE)!;
  const growthRatio = Math.round((largest.ms / largest.files / (headline.ms / headline.files)) * 1000) / 1000;
  return {
    slope_us_per_file: Math.round(slope * 1e6) / 1000,
    intercept_ms: ms(my - slope * mx),
    r2: syy === 0 ? 1 : Math.round(((sxy * sxy) / (sxx * syy)) * 10000) / 10000,
    us_per_file: perFile,
    per_file_largest_vs_headline: { value: growthRatio, aim: LINEAR_TOLERANCE, met: growthRatio <= LINEAR_TOLERANCE },
  };
}

function growthOf(bySize: Map<number, Walks>) {
  const out: Record<string, ReturnType<typeof growth>> = {};
  for (const kind of ["find", "search", "folded"] as const) {
    const contenders = Object.keys(bySize.get(HEADLINE)![kind]);
    for (const c of contenders) {
      out[`${kind}.${c}`] = growth([...bySize].map(([files, w]) => ({ files, ms: w[kind][c]!.median_ms })));
    }
  }
  return out;
}

interface Measured {
  trees: GeneratedTree[];
  rgVersion: string | null;
  compileMs: { serverfs: number; minimal: number };
  cold: Figures;
  read: Figures;
  reference: Figures;
  bySize: Map<number, Walks>;
  loadBefore: number[];
  began: number;
}

/** The JSON document: environment, trees, config, method, raw medians, ratios against the aims, growth. */
function reportOf({ trees, rgVersion, compileMs, cold, read, reference, bySize, loadBefore, began }: Measured) {
  const headline = bySize.get(HEADLINE)!;
  const ratios = {
    cold_start_compiled_vs_minimal: ratio(cold["serverfs_compiled"]!, cold["minimal_compiled"]!, AIMS.cold_start_compiled_vs_minimal),
    cold_start_compiled_vs_reference: ratio(cold["serverfs_compiled"]!, cold["reference_node"]!, AIMS.cold_start_compiled_vs_reference),
    cold_start_bun_vs_reference: ratio(cold["serverfs_bun"]!, cold["reference_node"]!, null),
    read_text_file_vs_reference: ratio(read["serverfs"]!, read["reference"]!, AIMS.read_text_file_vs_reference),
    find_vs_reference: ratio(reference["serverfs"]!, reference["reference"]!, AIMS.find_vs_reference),
    ...walkRatios(headline),
  };
  const growthFigures = growthOf(bySize);
  const judged = [...Object.entries(ratios), ...Object.entries(growthFigures).map(([k, g]) => [`growth.${k}`, g.per_file_largest_vs_headline] as const)];
  return {
    benchmark: "serverfs workspace access plane",
    date: new Date().toISOString(),
    environment: {
      platform: `${process.platform} ${process.arch}`,
      cpus: navigator.hardwareConcurrency,
      load_average: { before: loadBefore, after: loadavg() },
      bun: Bun.version,
      node: firstLine(["node", "--version"]),
      serverfs: JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")).version as string,
      reference_server: JSON.parse(readFileSync(join(REFERENCE_DIR, "package.json"), "utf8")).version as string,
      rg: rgVersion,
      find: firstLine(["find", "--version"]),
    },
    trees: trees.map((t) => ({
      files: t.files,
      directories: t.directories,
      bytes: t.bytes,
      find_matches: t.findMatches,
      search_hits: t.searchHits,
    })),
    queries: { find_pattern: FIND_PATTERN, search_query: SEARCH_NEEDLE },
    serverfs_config: {
      workdirs: `one read-only workdir per tree (${trees.map((t) => alias(t.files)).join(", ")})`,
      limits: LIMITS,
      search_workers: `${availableParallelism()} (the default: the core count)`,
      call_limit: CALL_LIMIT,
      note: "limits raised so find_files and search_text return every match and walk the whole tree, like search_files, find(1) and rg",
    },
    method: {
      client: "@modelcontextprotocol/sdk Client over stdio, one client per server, calls sequential",
      cold_start:
        "spawn → initialize answered; a fresh process per run; minimal_compiled is scripts/bench/lib/minimal-mcp-server.ts (SDK McpServer, one tool) compiled in this run",
      order: "contenders interleaved round-robin; one unmeasured warm-up each (read: 20)",
      peers:
        rgVersion !== null
          ? "find -type f -name; rg -F -n and rg -i -F -n, all cores (rg's default)"
          : "find -type f -name; rg is not installed: its figures are missing",
      aims_judged_on: `${HEADLINE} files; the other sizes are reported in by_size and growth`,
      compile_ms: { serverfs: ms(compileMs.serverfs), minimal: ms(compileMs.minimal) },
    },
    medians: { cold_start: cold, read_text_file_per_call: read, find_vs_reference: reference },
    by_size: Object.fromEntries([...bySize].map(([files, w]) => [files, { medians: w, ratios: walkRatios(w) }])),
    ratios,
    growth: growthFigures,
    unmet: judged.filter(([, r]) => r.met === false).map(([k]) => k),
    total_seconds: Math.round((performance.now() - began) / 100) / 10,
  };
}

async function main(): Promise<void> {
  const began = performance.now();
  const rgVersion = firstLine(["rg", "--version"]);
  if (rgVersion === null) log("rg is not installed: its figures are reported as peer_missing (apt-get install ripgrep)");
  log(`trees (generated once into ${CACHE_DIR})`);
  const trees = SIZES.map((files) => {
    const { tree, generated } = cachedTree(CACHE_DIR, files);
    log(`${generated ? "generated" : "cached"}: ${tree.files} files in ${tree.directories} directories, ${(tree.bytes / 2 ** 20).toFixed(1)} MiB`);
    return tree;
  });
  const headlineTree = trees.find((t) => t.files === HEADLINE)!;
  const loadBefore = loadavg();
  const work = tempDir("serverfs-bench-");
  const sessions: StdioSession[] = [];
  // The servers exit on stdin EOF, so ending this process ends them; only the temp dir needs removing.
  const abandon = (why: string, code: number) => {
    log(why);
    work.remove();
    process.exit(code);
  };
  const watchdog = setTimeout(() => abandon(`gave up: over the ${BUDGET_MS / 1000} s budget`, 1), BUDGET_MS);
  process.once("SIGINT", () => abandon("interrupted", 130));
  try {
    const workdirs = trees.map((t, i) => ({ slot: i + 1, alias: alias(t.files), path: t.root }));
    const config = writeConfig(work.path, { limits: LIMITS, workdirs });
    log("compiling ServerFS (package.json build line) and the minimal MCP server into the temp dir");
    const binary = join(work.path, "serverfs");
    const minimal = join(work.path, "minimal");
    const compileMs = { serverfs: compile(binary, null), minimal: compile(minimal, MINIMAL_SERVER) };

    const compiled: ServerLaunch = { label: "serverfs_compiled", command: binary, args: ["mcp", "--config", config], cwd: REPO_ROOT };
    const viaBun: ServerLaunch = { label: "serverfs_bun", command: BUN, args: [CLI, "mcp", "--config", config], cwd: REPO_ROOT };
    const floor: ServerLaunch = { label: "minimal_compiled", command: minimal, args: [], cwd: REPO_ROOT };
    const referenceLaunch: ServerLaunch = {
      label: "reference_node",
      command: "node",
      args: [join(REFERENCE_DIR, "dist", "index.js"), headlineTree.root],
      cwd: REPO_ROOT,
    };
    const cold = await coldStart([compiled, floor, viaBun, referenceLaunch]);

    const ours = await openSession(compiled);
    sessions.push(ours);
    const theirs = await openSession(referenceLaunch);
    sessions.push(theirs);
    const read = await perCallRead(ours, theirs, headlineTree);
    const reference = await findVsReference(ours, theirs, headlineTree);
    const bySize = new Map<number, Walks>();
    for (const tree of trees) bySize.set(tree.files, await walks(ours, tree, rgVersion !== null));

    const report = reportOf({ trees, rgVersion, compileMs, cold, read, reference, bySize, loadBefore, began });
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    log(`done in ${report.total_seconds} s; unmet: ${report.unmet.length === 0 ? "none" : report.unmet.join(", ")}`);
  } finally {
    clearTimeout(watchdog);
    for (const s of sessions) await s.close().catch(() => undefined);
    work.remove();
  }
}

await main();
