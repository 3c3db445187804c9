#!/usr/bin/env bun
/**
 * The test suite under load (docs/reliability.md "The suite under load"): a CPU burner on every core
 * (child processes spinning), and meanwhile the given test files or folders, each run `--runs` times with
 * `bun test --timeout 60000`, one after the other; `--parallel N` runs each with bun's `--parallel=N`, so
 * `--parallel 4 test` runs the whole tree as `npm test` runs it. A test that waits for time
 * instead of a fact fails here long before it fails on a user's busy machine. Prints each failed
 * run's `(fail)` lines on stderr as they come (its whole output goes to a file in the temp
 * directory, named there), then one line per file (runs passed, tests passed and
 * failed, median and slowest duration) and a summary line on stdout; exits 1 if any run failed (2 on
 * a bad flag).
 *
 *   bun run stress:suite [--runs 10] [--burners <cores>] [--timeout 60000] [--parallel 0] [test files or folders…]
 *
 * `--timeout 0` leaves bun's own 5 s bound per test and hook, as a bare `bun test` has it.
 * Without files it runs the ones that failed on a loaded 2-core machine before they waited for facts.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "../../test/helpers/workspace.ts";
import { sizeFlags } from "./lib/ground.ts";

const DEFAULT_FILES = [
  "test/unit/redact.test.ts",
  "test/unit/glob.test.ts",
  "test/mcp/event-loop.test.ts",
  "test/operator/tasks.test.ts",
  "test/bridge/fake-provider.test.ts",
  "test/mcp/read-parallel.test.ts",
  "test/mcp/read-find.test.ts",
  "test/e2e/mcp-tasks.test.ts",
  "test/bridge/contract-hitl.test.ts",
  "test/e2e/surface.test.ts",
  "test/mcp/hung-filesystem.test.ts",
];
const flags = sizeFlags("suite-under-load", { runs: 10, burners: availableParallelism(), timeout: 60_000, parallel: 0 }, "[test files or folders…]");
const files = flags.rest.length > 0 ? flags.rest : DEFAULT_FILES;
const say = (line: string) => process.stderr.write(`stress:suite: ${line}\n`);

// Spinning children, not threads of this process: the scheduler shares the cores between them and the
// tests' own processes as it would between a user's other work and the suite.
const burners = Array.from({ length: flags.burners }, () =>
  Bun.spawn([process.execPath, "-e", "for (;;) {}"], { stdin: "ignore", stdout: "ignore", stderr: "ignore" }),
);
const stopBurners = () => {
  for (const b of burners) b.kill("SIGKILL");
};
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    stopBurners();
    process.exit(130);
  });
}

interface FileTally {
  runsPassed: number;
  testsPassed: number;
  testsFailed: number;
  durationsMs: number[];
}
const tallies = new Map<string, FileTally>(files.map((f) => [f, { runsPassed: 0, testsPassed: 0, testsFailed: 0, durationsMs: [] }]));
/** bun's own summary count, e.g. " 12 pass" (0 when the run never got to its summary). */
const count = (output: string, word: "pass" | "fail") => Number(new RegExp(`^ *(\\d+) ${word}$`, "m").exec(output)?.[1] ?? 0);

/** Where a failed run's whole output goes. */
const logDir = mkdtempSync(join(tmpdir(), "suite-under-load-"));
const loadBefore = loadavg()[0]!;
const started = performance.now();
say(
  `${flags.burners} burners on ${availableParallelism()} cores, ${flags.runs} runs of ${files.length} files, ` +
    `timeout ${flags.timeout === 0 ? "bun's default" : `${flags.timeout} ms`}, ${flags.parallel === 0 ? "one file at a time" : `${flags.parallel} files at a time`}, load average ${loadBefore.toFixed(1)}`,
);
try {
  for (let run = 1; run <= flags.runs; run++) {
    for (const file of files) {
      const t0 = performance.now();
      // what `npm test` gives every test and hook (bun reads no timeout from bunfig.toml)
      const timeout = flags.timeout === 0 ? [] : ["--timeout", String(flags.timeout)];
      const parallel = flags.parallel === 0 ? [] : [`--parallel=${flags.parallel}`];
      const proc = Bun.spawn([process.execPath, "test", ...timeout, ...parallel, file], { cwd: REPO_ROOT, stdout: "pipe", stderr: "pipe" });
      const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      const ms = performance.now() - t0;
      const output = `${out}\n${err}`;
      const tally = tallies.get(file)!;
      const passed = count(output, "pass");
      const failed = count(output, "fail");
      tally.testsPassed += passed;
      tally.testsFailed += failed;
      tally.durationsMs.push(ms);
      // a run passes when bun says so and ran something: a file that failed to load reports no counts
      const ok = code === 0 && failed === 0 && passed > 0;
      if (ok) tally.runsPassed++;
      say(`run ${run}/${flags.runs} ${file}: ${ok ? "ok" : `FAILED (exit ${code})`}, ${passed} pass, ${failed} fail, ${(ms / 1000).toFixed(1)} s`);
      if (!ok) {
        const log = join(logDir, `run${run}-${file.replaceAll("/", "_")}.log`);
        writeFileSync(log, output);
        for (const line of output.split("\n").filter((l) => /^\(fail\)|error:|Expected|Received|did not hold|timed out/.test(l))) say(`  ${line}`);
        say(`  whole output: ${log}`);
      }
    }
  }
} finally {
  stopBurners();
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
let runsFailed = 0;
for (const [file, t] of tallies) {
  runsFailed += flags.runs - t.runsPassed;
  console.log(
    `${file}: ${t.runsPassed}/${flags.runs} runs passed, ${t.testsPassed} tests passed, ${t.testsFailed} failed, median ${seconds(median(t.durationsMs))}, slowest ${seconds(Math.max(0, ...t.durationsMs))}`,
  );
}
const total = files.length * flags.runs;
console.log(
  `suite-under-load: ${total - runsFailed}/${total} file runs passed (${flags.runs} runs of ${files.length} files) with ${flags.burners} burners, ` +
    `${seconds(performance.now() - started)}, load average ${loadBefore.toFixed(1)} before, ${loadavg()[0]!.toFixed(1)} at the end`,
);
process.exit(runsFailed === 0 ? 0 : 1);
