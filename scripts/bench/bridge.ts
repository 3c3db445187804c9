#!/usr/bin/env bun
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
/**
 * The Bridge benchmark (docs/performance.md, "## Bridge"): a real `serverfs bridge` process driven
 * over its Unix socket, each figure next to its limit — `task.get` against a bare NDJSON echo
 * server over the same kind of socket, event ingestion against raw batched inserts into the same
 * schema — plus the spool, startup with a large database, retention GC and memory. Progress goes
 * to stderr; stdout gets one JSON document with medians, ratios and pass/miss against each aim.
 *
 *   bun run bench:bridge     (package.json)   or   bun run scripts/bench/bridge.ts
 *
 * `--echo-server SOCKET` runs only the echo server (the benchmark starts itself that way, so the
 * echo server, like the Bridge, is a process of its own).
 *
 * `--faults` runs only the figures of docs/reliability.md "The Bridge under faults" (submit latency
 * under a burst) and prints their JSON document.
 *
 * `--lines` runs only the long-line memory figures (peak RSS for 1, 16 and 60 MiB provider lines)
 * and prints their JSON document.
 *
 * `--burst` runs only the burst against the fake providers alone (200 tasks, 16 at a time) and
 * prints its JSON document.
 *
 * `--result-check` runs only the cost of the client's result check (docs/decisions.md, "The Bridge
 * client checks every result"): a `task.get` answer checked against its schema in process, next to
 * a whole `BridgeClient.call("task.get")` as the MCP side makes it, and prints its JSON document.
 */
import type { Socket } from "bun";
import * as v from "valibot";
import { BridgeClient } from "../../src/shared/bridge-protocol/client.ts";
import { METHOD_RESULTS } from "../../src/shared/bridge-protocol/results.ts";
import { newTaskId } from "../../src/shared/ids.ts";
import { resultsDir, writeSpool } from "../../src/shared/spool.ts";
import { hoursBeforeIso, nowIso } from "../../src/shared/time.ts";
import { encoder } from "../../src/shared/utf8.ts";
import { FAKE_PROVIDER_SCRIPT } from "../../src/workers/providers/fake.ts";
import { type BridgeEnv, type BridgeProcess, bridgeEnv, call, isTerminalTask, startBridgeProcess, waitForTask } from "../../test/helpers/bridge.ts";
import { BUN, REPO_ROOT, tempDir } from "../../test/helpers/workspace.ts";
import { type BurstLanes, bridgeBurst, providersAlone } from "./lib/bridge-burst-ceiling.ts";
import { type IngestRound, ingestRound } from "./lib/bridge-ingest.ts";
import { connectLines, type LineClient, longestRoundTrip, type RoundTrips, roundTrips } from "./lib/bridge-line-client.ts";
import { type LineMemory, lineMemory } from "./lib/bridge-line-memory.ts";
import { maxRssDuring, peakRssMb, settledRss } from "./lib/bridge-rss.ts";
import { rawBatchedInserts, seedFinishedTasks } from "./lib/bridge-seed.ts";
import { submitBurst } from "./lib/bridge-submit-burst.ts";
import { median, ms } from "./lib/measure.ts";

/** The whole run must end within this (2 shared cores). */
const BUDGET_MS = 300_000;
const RPC = { rounds: 9, pinnedRounds: 5, warmup: 1_000, sequential: 2_000, pipelined: 8_000, depth: 16 };
const INGEST = { tasks: 4, eventsPerTask: 9_990, target: 100_000, rawBatch: 64 };
const SPOOL = { runs: 5, bytes: 8 * 1024 * 1024, chunk: 65_536, piece: "serverfs result\n" };
const STARTUP = { runs: 5, retained: 100_000, expired: 10_000, expiredSpoolText: "x".repeat(1024) };
/** Longer than the Bridge's 1 s idle delay before it gives memory back (src/main/bridge/service/context.ts). */
const AFTER_TASKS_SETTLE_MS = 2_500;
/** The pace of the `task.get` probe that watches the main thread while it gives memory back. */
const STALL_PROBE_GAP_MS = 2;
/** Provider line sizes in MiB: small, large, and just under the 64 MiB line cap. */
const LINE_SIZES_MIB = [1, 16, 60] as const;
/** The product default; the test helper's 1 s would put a GC pass inside every measurement. */
const LIFECYCLE = { maintenance_interval_seconds: 30 };

const log = (line: string) => process.stderr.write(`bench:bridge: ${line}\n`);

type Aim = { value: number; at_most: number; met: boolean } | { value: number; at_least: number; met: boolean };
const atMost = (value: number, limit: number): Aim => ({ value, at_most: limit, met: value <= limit });
const atLeast = (value: number, limit: number): Aim => ({ value, at_least: limit, met: value >= limit });
const ratio = (a: number, b: number) => Math.round((a / b) * 1000) / 1000;

// ---------------------------------------------------------------------------------------------
// The echo server: the limit for one NDJSON connection over a Unix socket.

interface EchoState {
  parts: Buffer[];
  unsent: Buffer | null;
}

/** Answers every line with itself, one write per line as the Bridge writes one response per request. */
function serveEcho(socketPath: string): void {
  const flush = (s: Socket<EchoState>) => {
    while (s.data.unsent !== null) {
      const n = s.write(s.data.unsent);
      if (n === s.data.unsent.length) s.data.unsent = null;
      else if (n <= 0) return;
      else s.data.unsent = s.data.unsent.subarray(n);
    }
  };
  Bun.listen<EchoState>({
    unix: socketPath,
    socket: {
      open(s) {
        s.data = { parts: [], unsent: null };
      },
      data(s, chunk) {
        let start = 0;
        for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a, start)) {
          s.data.parts.push(chunk.subarray(start, nl + 1));
          const line = Buffer.concat(s.data.parts);
          s.data.parts = [];
          start = nl + 1;
          s.data.unsent = s.data.unsent === null ? line : Buffer.concat([s.data.unsent, line]);
          flush(s);
        }
        if (start < chunk.length) s.data.parts.push(Buffer.from(chunk.subarray(start)));
      },
      drain: flush,
    },
  });
  process.stdout.write("ready\n");
}

interface EchoServer {
  pid: number;
  stop(): Promise<void>;
}

async function startEcho(socketPath: string): Promise<EchoServer> {
  const proc = Bun.spawn([BUN, import.meta.path, "--echo-server", socketPath], { stdout: "pipe", stderr: "inherit" });
  const reader = proc.stdout.getReader();
  const first = await reader.read();
  reader.releaseLock();
  if (first.done || !new TextDecoder().decode(first.value).startsWith("ready")) throw new Error("the echo server did not start");
  return {
    pid: proc.pid,
    async stop() {
      proc.kill();
      await proc.exited;
    },
  };
}

/**
 * Sets the CPU affinity of every thread of `pids` (`taskset -a`); false when that is not possible.
 * Used to take the VM's cross-CPU wake-up latency out of a sequential round trip, for diagnosis.
 */
function setAffinity(pids: number[], cpus: string): boolean {
  return pids.every((pid) => {
    try {
      return Bun.spawnSync(["taskset", "-a", "-p", "-c", cpus, String(pid)], { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
    } catch {
      return false;
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Phases

interface RpcFigures {
  sequential: RoundTrips;
  pipelined: RoundTrips;
}

type Target = "bridge" | "echo";

const medianTrips = (runs: RoundTrips[]): RoundTrips => ({
  requests: runs[0]!.requests,
  p50_ms: median(runs.map((r) => r.p50_ms)),
  requests_per_s: median(runs.map((r) => r.requests_per_s)),
});

/**
 * `task.get` on one connection against the echo server, alternated round by round, placed by the
 * kernel; then the same with the servers pinned to CPU 0 and the client on CPU 0, then on CPU 1 (a
 * diagnostic: on a small VM a wake-up on the other CPU costs more than the Bridge's own work, while
 * sharing one CPU halves what a pipelined client and server can do together).
 */
async function rpcSpeed(bridge: { socket: string; pid: number }, echo: { socket: string; pid: number }, taskId: string) {
  const requestId = `mcp_${newTaskId().slice(4)}`;
  const line = JSON.stringify({ protocol_version: 1, request_id: requestId, method: "task.get", params: { task_id: taskId } });
  const okPrefix = `{"request_id":"${requestId}","ok":true,"result":{"task_id":"${taskId}"`;
  const targets: { name: Target; client: LineClient; accept: (r: string) => boolean }[] = [
    { name: "bridge", client: await connectLines(bridge.socket), accept: (r) => r.startsWith(okPrefix) },
    { name: "echo", client: await connectLines(echo.socket), accept: (r) => r === line },
  ];
  const measure = async (rounds: number): Promise<Record<Target, RpcFigures>> => {
    const samples: Record<Target, { sequential: RoundTrips[]; pipelined: RoundTrips[] }> = {
      bridge: { sequential: [], pipelined: [] },
      echo: { sequential: [], pipelined: [] },
    };
    for (let round = 1; round <= rounds; round++) {
      for (const t of targets) {
        samples[t.name].sequential.push(await roundTrips(t.client, line, RPC.sequential, 1, t.accept));
        samples[t.name].pipelined.push(await roundTrips(t.client, line, RPC.pipelined, RPC.depth, t.accept));
      }
    }
    const figures = (name: Target): RpcFigures => ({
      sequential: medianTrips(samples[name].sequential),
      pipelined: medianTrips(samples[name].pipelined),
    });
    return { bridge: figures("bridge"), echo: figures("echo") };
  };
  try {
    const responseBytes = Buffer.byteLength(await targets[0]!.client.request(line)) + 1;
    for (const t of targets) await roundTrips(t.client, line, RPC.warmup, RPC.depth, t.accept);
    log(`rpc: ${RPC.rounds} rounds of ${RPC.sequential} sequential + ${RPC.pipelined} with ${RPC.depth} in flight, Bridge and echo in turn`);
    const scheduled = await measure(RPC.rounds);
    const servers = [bridge.pid, echo.pid];
    const pinned = async (clientCpu: string, what: string): Promise<{ task_get: RpcFigures; echo: RpcFigures } | null> => {
      if (!setAffinity(servers, "0") || !setAffinity([process.pid], clientCpu)) return null;
      log(`rpc: ${RPC.pinnedRounds} more rounds with ${what}`);
      try {
        const figures = await measure(RPC.pinnedRounds);
        return { task_get: figures.bridge, echo: figures.echo };
      } finally {
        setAffinity([...servers, process.pid], `0-${navigator.hardwareConcurrency - 1}`);
      }
    };
    const sameCpu = await pinned("0", "the client and the servers on CPU 0");
    const splitCpus = navigator.hardwareConcurrency > 1 ? await pinned("1", "the servers on CPU 0, the client on CPU 1") : null;
    return {
      task_get: scheduled.bridge,
      echo: scheduled.echo,
      same_cpu: sameCpu,
      split_cpus: splitCpus,
      request_bytes: Buffer.byteLength(line) + 1,
      response_bytes: responseBytes,
    };
  } finally {
    for (const t of targets) t.client.close();
  }
}

/**
 * Rounds of concurrent events tasks until `INGEST.target` events are stored; after each round the
 * same number of raw batched inserts into a fresh file, so both see the same outside load.
 */
async function ingestion(env: BridgeEnv, pid: number, work: string) {
  const rounds: (IngestRound & { raw_events_per_s: number; vs_raw: number })[] = [];
  let stored = 0;
  const { max_mb } = await maxRssDuring(pid, 50, async () => {
    while (stored < INGEST.target) {
      log(`ingestion round ${rounds.length + 1}: ${INGEST.tasks} × events:${INGEST.eventsPerTask}, then as many raw inserts (${stored} events stored so far)`);
      const r = await ingestRound(env.socketPath, env.stateDir, INGEST.tasks, INGEST.eventsPerTask);
      const raw = rawBatchedInserts(join(work, `raw-${rounds.length + 1}.sqlite3`), r.provider_events, INGEST.rawBatch, INGEST.tasks);
      rounds.push({ ...r, raw_events_per_s: raw.events_per_s, vs_raw: ratio(r.ingest_events_per_s, raw.events_per_s) });
      stored += r.events_stored;
    }
  });
  return {
    rounds,
    events_stored: stored,
    ingest_events_per_s: median(rounds.map((r) => r.ingest_events_per_s)),
    end_to_end_events_per_s: median(rounds.map((r) => r.end_to_end_events_per_s)),
    raw_batched_inserts_events_per_s: median(rounds.map((r) => r.raw_events_per_s)),
    vs_raw: median(rounds.map((r) => r.vs_raw)),
    rss_max_mb: max_mb,
  };
}

/** 8 MiB: the spool worker's write (called directly), and a real spooled task read back over RPC. */
async function spool(env: BridgeEnv, work: string) {
  const text = SPOOL.piece.repeat(SPOOL.bytes / SPOOL.piece.length);
  log(`spool write: ${SPOOL.runs} × 8 MiB through writeSpool`);
  const writes: number[] = [];
  const stateDir = join(work, "spool-state");
  mkdirSync(stateDir, { mode: 0o700 });
  for (let i = 0; i < SPOOL.runs; i++) {
    const started = performance.now();
    writeSpool(stateDir, newTaskId(), encoder.encode(text));
    writes.push(performance.now() - started);
  }

  log("spool read-back: one 8 MiB task, read in 64 KiB chunks over RPC");
  const started = performance.now();
  const { task_id } = await call<{ task_id: string }>(env.socketPath, "task.submit", {
    runtime: "fake",
    workdir: "repo",
    path: "",
    profile: "review",
    prompt: `repeat:${SPOOL.bytes / SPOOL.piece.length}:${SPOOL.piece}`,
  });
  const task = await waitForTask(env.socketPath, task_id, isTerminalTask, 60_000);
  const taskMs = performance.now() - started;
  const result = task["result"] as { storage: string; size_bytes: number; sha256: string };
  if (task["status"] !== "succeeded" || result.storage !== "spool" || result.size_bytes !== SPOOL.bytes) {
    throw new Error(`the 8 MiB task ended ${String(task["status"])} with ${JSON.stringify(result)}`);
  }
  const client = await connectLines(env.socketPath);
  const reads: number[] = [];
  let chunks = 0;
  try {
    for (let i = 0; i < SPOOL.runs; i++) {
      const t0 = performance.now();
      const hash = new Bun.CryptoHasher("sha256");
      chunks = 0;
      for (let offset = 0, eof = false; !eof; chunks++) {
        const line = JSON.stringify({
          protocol_version: 1,
          request_id: `r${chunks}`,
          method: "task.result.read",
          params: { task_id, offset_bytes: offset, max_bytes: SPOOL.chunk },
        });
        const r = JSON.parse(await client.request(line)) as { ok: boolean; result: { text: string; next_offset_bytes: number; eof: boolean } };
        if (!r.ok) throw new Error(`task.result.read failed at ${offset}`);
        hash.update(r.result.text);
        offset = r.result.next_offset_bytes;
        eof = r.result.eof;
      }
      reads.push(performance.now() - t0);
      if (hash.digest("hex") !== result.sha256) throw new Error("the read-back does not hash to result.sha256");
    }
  } finally {
    client.close();
  }
  return {
    bytes: SPOOL.bytes,
    write_ms: ms(median(writes)),
    write_runs: writes.map(ms),
    read_back_ms: ms(median(reads)),
    read_back_runs: reads.map(ms),
    read_back_chunks: chunks,
    task_submit_to_succeeded_ms: ms(taskMs),
  };
}

async function timedStart(env: BridgeEnv, live: Set<BridgeProcess>): Promise<{ bridge: BridgeProcess; readyMs: number }> {
  const started = performance.now();
  const bridge = await startBridgeProcess(env);
  const readyMs = performance.now() - started;
  live.add(bridge);
  return { bridge, readyMs };
}

/**
 * Only after the Bridge answered a request: `runBridge` installs its signal handlers just after
 * `bridge_started`, and a SIGTERM in between ends the process without the docs/task-model.md#shutdown.
 */
async function stopBridge(bridge: BridgeProcess, live: Set<BridgeProcess>): Promise<void> {
  const code = await bridge.stop();
  live.delete(bridge);
  if (code !== 0) throw new Error(`the Bridge exited with ${code}`);
}

/**
 * Spawn → `bridge_started` with an empty database, with 100,000 retained tasks, and with 10,000
 * tasks past retention that the startup GC pass must collect (spool files included) — interleaved
 * run by run. GC time is the expired start's median minus the empty start's.
 */
async function startup(live: Set<BridgeProcess>, envs: Set<BridgeEnv>) {
  const fresh = (): BridgeEnv => {
    const env = bridgeEnv({ lifecycle: LIFECYCLE });
    envs.add(env);
    return env;
  };
  const empty = fresh();
  const retained = fresh();
  log(`seeding ${STARTUP.retained} retained tasks`);
  const retainedIds = seedFinishedTasks(retained.stateDir, { count: STARTUP.retained, newestCompletedAt: hoursBeforeIso(nowIso(), 1) });
  const samples = { empty: [] as number[], retained: [] as number[], expired: [] as number[] };
  for (let run = 1; run <= STARTUP.runs; run++) {
    log(`startup run ${run}/${STARTUP.runs}: empty, ${STARTUP.retained} retained, ${STARTUP.expired} expired with spools`);
    const a = await timedStart(empty, live);
    samples.empty.push(a.readyMs);
    await call(empty.socketPath, "task.list", { limit: 1 });
    await stopBridge(a.bridge, live);

    const b = await timedStart(retained, live);
    samples.retained.push(b.readyMs);
    const kept = await call(retained.socketPath, "task.get", { task_id: retainedIds[run]! });
    if (kept["status"] !== "succeeded") throw new Error("a retained task did not survive startup");
    await stopBridge(b.bridge, live);

    const expired = fresh();
    seedFinishedTasks(expired.stateDir, {
      count: STARTUP.expired,
      newestCompletedAt: hoursBeforeIso(nowIso(), 169),
      spoolText: STARTUP.expiredSpoolText,
    });
    const c = await timedStart(expired, live);
    samples.expired.push(c.readyMs);
    const left = await call<{ tasks: unknown[] }>(expired.socketPath, "task.list", { limit: 1 });
    const spools = readdirSync(resultsDir(expired.stateDir)).length;
    if (left.tasks.length !== 0 || spools !== 0) throw new Error(`GC left ${left.tasks.length > 0 ? "tasks" : ""} ${spools} spool files`);
    await stopBridge(c.bridge, live);
    expired.dir.remove();
    envs.delete(expired);
  }
  const ready = {
    empty_ms: ms(median(samples.empty)),
    retained_100k_ms: ms(median(samples.retained)),
    expired_10k_ms: ms(median(samples.expired)),
  };
  return {
    ready,
    runs: Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, v.map(ms)])),
    gc_10k_expired_ms: ms(ready.expired_10k_ms - ready.empty_ms),
  };
}

/** Four `wait:` tasks running at once; cancelled afterwards. */
async function rssWithRunningTasks(env: BridgeEnv, pid: number): Promise<number> {
  const ids: string[] = [];
  for (let i = 0; i < INGEST.tasks; i++) {
    const r = await call<{ task_id: string }>(env.socketPath, "task.submit", {
      runtime: "fake",
      workdir: "repo",
      path: "",
      profile: "review",
      prompt: "wait:",
    });
    ids.push(r.task_id);
  }
  await Promise.all(ids.map((id) => waitForTask(env.socketPath, id, (t) => t["status"] === "running")));
  const { max_mb } = await maxRssDuring(pid, 50, () => Bun.sleep(1_000));
  for (const id of ids) await call(env.socketPath, "task.cancel", { task_id: id });
  await Promise.all(ids.map((id) => waitForTask(env.socketPath, id, isTerminalTask)));
  return max_mb;
}

// ---------------------------------------------------------------------------------------------

/** The cores are shared: the load around the run says how much the figures can be trusted. */
const loadAverage = (): string => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

async function main(): Promise<void> {
  const began = performance.now();
  const loadBefore = loadAverage();
  const work = tempDir("sfs-bb-");
  const live = new Set<BridgeProcess>();
  const envs = new Set<BridgeEnv>();
  let echo: EchoServer | null = null;
  const cleanUp = async () => {
    await Promise.all([...live].map((b) => b.stop().catch(() => undefined)));
    await echo?.stop().catch(() => undefined);
    for (const env of envs) env.dir.remove();
    work.remove();
  };
  const abandon = (why: string, code: number) => {
    log(why);
    void cleanUp().finally(() => process.exit(code));
  };
  const watchdog = setTimeout(() => abandon(`gave up: over the ${BUDGET_MS / 1000} s budget`, 1), BUDGET_MS);
  process.once("SIGINT", () => abandon("interrupted", 130));
  process.once("SIGTERM", () => abandon("terminated", 143));
  try {
    const env = bridgeEnv({ lifecycle: LIFECYCLE });
    envs.add(env);
    log("starting the Bridge");
    const { bridge } = await timedStart(env, live);
    const pid = bridge.proc.pid;
    const idleMb = await settledRss(pid);
    log(`idle RSS ${idleMb} MB; 4 running tasks`);
    const fourTasksMb = await rssWithRunningTasks(env, pid);

    const echoSocket = join(work.path, "echo.sock");
    echo = await startEcho(echoSocket);
    const { task_id } = await call<{ task_id: string }>(env.socketPath, "task.submit", {
      runtime: "fake",
      workdir: "repo",
      path: "",
      profile: "review",
      prompt: "complete:the task.get benchmark's task",
    });
    await waitForTask(env.socketPath, task_id, isTerminalTask);
    const rpc = await rpcSpeed({ socket: env.socketPath, pid }, { socket: echoSocket, pid: echo.pid }, task_id);
    await echo.stop();
    echo = null;

    const ingest = await ingestion(env, pid, work.path);
    const spooled = await spool(env, work.path);
    // the idle release fires 1 s after the read-back's last page, inside this window: its full GC on
    // the main thread is the longest stall a client sees in it
    log(`idle release: task.get every ${STALL_PROBE_GAP_MS} ms for ${AFTER_TASKS_SETTLE_MS / 1000} s, then idle RSS`);
    const probe = await connectLines(env.socketPath);
    // a task.get of an id no task has: a real lookup with a ~150-byte answer, so the probe's own
    // answers stay far below the 1 MiB that arms the release again (and would push it past the window)
    const getLine = JSON.stringify({ protocol_version: 1, request_id: "stall", method: "task.get", params: { task_id: newTaskId() } });
    const releaseStall = await longestRoundTrip(probe, getLine, AFTER_TASKS_SETTLE_MS, STALL_PROBE_GAP_MS, (r) => r.includes('"AGENT_TASK_NOT_FOUND"'));
    probe.close();
    const idleAfterMb = await settledRss(pid, 0);
    const peakMb = peakRssMb(pid);
    await stopBridge(bridge, live);

    const started = await startup(live, envs);
    const lines = await lineMemory(LINE_SIZES_MIB, live, envs, log);
    const burst = await burstVsProviders(live, envs);
    const sameCpuP50 = rpc.same_cpu && ratio(rpc.same_cpu.task_get.sequential.p50_ms, rpc.same_cpu.echo.sequential.p50_ms);

    const report = {
      benchmark: "serverfs bridge",
      date: new Date().toISOString(),
      environment: {
        platform: `${process.platform} ${process.arch}`,
        cpus: navigator.hardwareConcurrency,
        bun: Bun.version,
        serverfs: JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")).version as string,
        state_dir: "under os.tmpdir()",
        load_average_before: loadBefore,
        load_average_after: loadAverage(),
      },
      method: {
        bridge: "a real `serverfs bridge` process (fake runtime), maintenance_interval_seconds 30",
        rpc: `one persistent connection; ${RPC.warmup} warm-up requests, then ${RPC.rounds} rounds of ${RPC.sequential} sequential and ${RPC.pipelined} with ${RPC.depth} in flight, alternating with the echo server; medians of the rounds; same_cpu / split_cpus: ${RPC.pinnedRounds} more rounds each with the Bridge and the echo server pinned to CPU 0 (taskset -a) and the client on CPU 0 / CPU 1, a diagnostic`,
        echo: "Bun.listen({unix}) NDJSON echo in its own process, one write per line; same client",
        ingestion: `rounds of ${INGEST.tasks} concurrent events:${INGEST.eventsPerTask} review tasks until ${INGEST.target} events are stored; rate = provider events / (last − first batch commit timestamp)`,
        raw_limit: `after each round, as many inserts with bun:sqlite into a fresh file: the schema, WAL, synchronous=FULL, ${INGEST.rawBatch} per BEGIN IMMEDIATE`,
        spool: `write: writeSpool (the spool worker's function) on 8 MiB, ${SPOOL.runs} runs; read-back: task.result.read max_bytes ${SPOOL.chunk} from 0 to eof on one connection, sha256 checked, ${SPOOL.runs} runs`,
        startup: `spawn → bridge_started, ${STARTUP.runs} runs each, interleaved; GC = expired − empty (10,000 tasks with 1 KiB spool files and 2 events each)`,
        rss: "VmRSS of the Bridge process (workers included, providers not); MB = 10^6 bytes",
        long_lines: LONG_LINES_METHOD,
        burst_vs_providers: BURST_CEILING_METHOD,
        rss_after: `idle_after_run_mb: settled VmRSS ${AFTER_TASKS_SETTLE_MS / 1000} s after the 8 MiB result's last read-back page (after the ingestion rounds' ~120,000 events and the 8 MiB result), against idle_mb at start; peak_hwm_mb: VmHWM then`,
        release_stall: `task.get of an unknown id one at a time, ${STALL_PROBE_GAP_MS} ms apart, during those ${AFTER_TASKS_SETTLE_MS / 1000} s, in which the idle release runs (1 s after the last page); max_ms bounds how long the main thread's full GC held its event loop`,
      },
      rpc,
      ingestion: ingest,
      spool: spooled,
      startup: started,
      long_lines: lines,
      burst_vs_providers: burst,
      rss: {
        idle_mb: idleMb,
        four_running_tasks_mb: fourTasksMb,
        ingestion_max_mb: ingest.rss_max_mb,
        idle_after_run_mb: idleAfterMb,
        peak_hwm_mb: peakMb,
        idle_after_vs_before: ratio(idleAfterMb, idleMb),
        release_stall: releaseStall,
      },
      ratios: {
        task_get_p50_vs_echo: ratio(rpc.task_get.sequential.p50_ms, rpc.echo.sequential.p50_ms),
        task_get_sequential_rps_vs_echo: ratio(rpc.task_get.sequential.requests_per_s, rpc.echo.sequential.requests_per_s),
        task_get_pipelined_rps_vs_echo: ratio(rpc.task_get.pipelined.requests_per_s, rpc.echo.pipelined.requests_per_s),
        same_cpu_task_get_p50_vs_echo: rpc.same_cpu && ratio(rpc.same_cpu.task_get.sequential.p50_ms, rpc.same_cpu.echo.sequential.p50_ms),
        split_cpus_task_get_p50_vs_echo: rpc.split_cpus && ratio(rpc.split_cpus.task_get.sequential.p50_ms, rpc.split_cpus.echo.sequential.p50_ms),
        split_cpus_task_get_pipelined_rps_vs_echo:
          rpc.split_cpus && ratio(rpc.split_cpus.task_get.pipelined.requests_per_s, rpc.split_cpus.echo.pipelined.requests_per_s),
        ingestion_vs_raw_inserts: ingest.vs_raw,
        rss_idle_after_vs_before: ratio(idleAfterMb, idleMb),
      },
      aims: {
        task_get_p50_vs_echo: atMost(ratio(rpc.task_get.sequential.p50_ms, rpc.echo.sequential.p50_ms), 2),
        task_get_sequential_rps: atLeast(rpc.task_get.sequential.requests_per_s, 8_000),
        task_get_pipelined_rps: atLeast(rpc.task_get.pipelined.requests_per_s, 50_000),
        ingestion_events_per_s: atLeast(ingest.ingest_events_per_s, 100_000),
        spool_write_8mib_ms: atMost(spooled.write_ms, 100),
        spool_read_back_8mib_ms: atMost(spooled.read_back_ms, 500),
        ready_100k_retained_ms: atMost(started.ready.retained_100k_ms, 500),
        gc_10k_expired_ms: atMost(started.gc_10k_expired_ms, 2_000),
        rss_idle_mb: atMost(idleMb, 80),
        rss_four_running_tasks_mb: atMost(fourTasksMb, 160),
        ...lineAims(lines),
        // issue 14's aims
        ingestion_vs_raw_inserts: atLeast(ingest.vs_raw, 0.8),
        task_get_p50_vs_echo_same_cpu: sameCpuP50 === null ? null : atMost(sameCpuP50, 1.5),
        burst_vs_providers_alone: atLeast(burst.vs_providers_alone, 0.7),
        rss_idle_after_vs_before: atMost(ratio(idleAfterMb, idleMb), 1.2),
        idle_release_stall_ms: atMost(releaseStall.max_ms, 100),
      },
      /** The two RPC aims again, each in the placement that isolates what it is about. */
      diagnostic_aims: {
        task_get_p50_vs_echo_same_cpu: rpc.same_cpu && atMost(ratio(rpc.same_cpu.task_get.sequential.p50_ms, rpc.same_cpu.echo.sequential.p50_ms), 2),
        task_get_pipelined_rps_split_cpus: rpc.split_cpus && atLeast(rpc.split_cpus.task_get.pipelined.requests_per_s, 50_000),
      },
      total_seconds: Math.round((performance.now() - began) / 100) / 10,
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    const missed = Object.entries(report.aims)
      .filter(([, a]) => a !== null && !a.met)
      .map(([k]) => k);
    log(`done in ${report.total_seconds} s; ${missed.length === 0 ? "every aim met" : `missed: ${missed.join(", ")}`}`);
  } finally {
    clearTimeout(watchdog);
    await cleanUp();
  }
}

const LONG_LINES_METHOD =
  "per size and kind, a fresh Bridge: settled idle VmRSS (median of 5 samples after 1 s), then one fake task whose provider writes a single line of exactly that size (`big:` → agent_message, `repeat:` → final; max_result: an 8 MiB result of 7 control characters and a euro sign per 10 bytes, escaped into its line), then VmHWM once the task is terminal; aim: VmHWM <= idle + 2 × line";

/** One aim per measured line: its peak against idle + 2 × the line. */
const lineAims = (lines: readonly LineMemory[]): Record<string, Aim> =>
  Object.fromEntries(lines.map((l) => [`peak_rss_${l.kind === "max_result" ? "" : `${l.line_mib}mib_`}${l.kind}_line_mb`, atMost(l.peak_mb, l.aim_mb)]));

/** One part of the bench alone, `--lines`, `--burst` or `--faults`: its figures in a report of their own. */
async function partAlone(benchmark: string, measure: (live: Set<BridgeProcess>, envs: Set<BridgeEnv>) => Promise<Record<string, unknown>>): Promise<void> {
  const began = performance.now();
  const loadBefore = loadAverage();
  const live = new Set<BridgeProcess>();
  const envs = new Set<BridgeEnv>();
  try {
    const figures = await measure(live, envs);
    const report = {
      benchmark,
      date: new Date().toISOString(),
      environment: { cpus: navigator.hardwareConcurrency, bun: Bun.version, load_average_before: loadBefore, load_average_after: loadAverage() },
      ...figures,
      total_seconds: Math.round((performance.now() - began) / 100) / 10,
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await Promise.all([...live].map((b) => b.stop().catch(() => undefined)));
    for (const env of envs) env.dir.remove();
  }
}

const longLines = () =>
  partAlone("serverfs bridge: long provider lines", async (live, envs) => {
    const lines = await lineMemory(LINE_SIZES_MIB, live, envs, log);
    return { method: { long_lines: LONG_LINES_METHOD, rss: "MB = 10^6 bytes; line sizes in MiB" }, long_lines: lines, aims: lineAims(lines) };
  });

const BURST = { tasks: 200, connections: 8, rounds: 3 };
const BURST_METHOD = `${BURST.tasks} task.submit (fake review tasks, \`complete:\`) as fast as ${BURST.connections} connections can send them, one in flight per connection, each timed from write to answer, on a fresh Bridge with max_active_tasks ${BURST.tasks}; all_terminal_ms: first write → the last task's completed_at (read from the database, no RPC poller); ${BURST.rounds} bursts, each after the previous tasks ended; medians of the bursts' figures`;

/** Submit p50/p99 while 200 submissions arrive at once and the burst's tasks/s, median of a few bursts. */
async function bursts(live: Set<BridgeProcess>, envs: Set<BridgeEnv>) {
  const env = bridgeEnv({ lifecycle: { ...LIFECYCLE, max_active_tasks: BURST.tasks } });
  envs.add(env);
  const { bridge } = await timedStart(env, live);
  const rounds = [];
  for (let round = 1; round <= BURST.rounds; round++) {
    log(`submit burst ${round}/${BURST.rounds}: ${BURST.tasks} submissions over ${BURST.connections} connections`);
    rounds.push(await submitBurst(env, BURST.tasks, BURST.connections));
  }
  await stopBridge(bridge, live);
  return {
    p50_ms: median(rounds.map((b) => b.p50_ms)),
    p99_ms: median(rounds.map((b) => b.p99_ms)),
    max_ms: median(rounds.map((b) => b.max_ms)),
    wall_ms: median(rounds.map((b) => b.wall_ms)),
    all_terminal_ms: median(rounds.map((b) => b.all_terminal_ms)),
    tasks_per_s: median(rounds.map((b) => b.tasks_per_s)),
    bursts: rounds,
  };
}

const CEILING = { tasks: 200, concurrency: 16, rounds: 3 };
const BURST_CEILING_METHOD = `${CEILING.tasks} fake review tasks (\`complete:\`) through a fresh Bridge with max_active_tasks ${CEILING.concurrency}, ${CEILING.concurrency} lanes each submitting one task and following it with task.events long polls to its terminal event; against ${CEILING.tasks} fake provider processes spawned and driven alone (handshake, run request, final line, stdin closed) by ${CEILING.concurrency} lanes; first request → last outcome seen; ${CEILING.rounds} rounds, the order alternating; vs_providers_alone = median of the rounds' Bridge ÷ alone tasks/s`;

/** The issue-14 burst: the Bridge's tasks/s at 16 active against the fake providers' own, round by round. */
async function burstVsProviders(live: Set<BridgeProcess>, envs: Set<BridgeEnv>) {
  const env = bridgeEnv({ lifecycle: { ...LIFECYCLE, max_active_tasks: CEILING.concurrency } });
  envs.add(env);
  const { bridge } = await timedStart(env, live);
  const through = () => bridgeBurst(env.socketPath, CEILING.tasks, CEILING.concurrency);
  const alone = () => providersAlone([BUN, FAKE_PROVIDER_SCRIPT], env.workspace, CEILING.tasks, CEILING.concurrency);
  const rounds: { bridge: BurstLanes; alone: BurstLanes; vs_providers_alone: number }[] = [];
  for (let round = 1; round <= CEILING.rounds; round++) {
    log(
      `burst ${round}/${CEILING.rounds}: ${CEILING.tasks} tasks through the Bridge and ${CEILING.tasks} fake providers alone, ${CEILING.concurrency} at a time`,
    );
    let b: BurstLanes;
    let a: BurstLanes;
    if (round % 2 === 1) {
      b = await through();
      a = await alone();
    } else {
      a = await alone();
      b = await through();
    }
    rounds.push({ bridge: b, alone: a, vs_providers_alone: ratio(b.tasks_per_s, a.tasks_per_s) });
  }
  await stopBridge(bridge, live);
  return {
    bridge_tasks_per_s: median(rounds.map((r) => r.bridge.tasks_per_s)),
    providers_alone_tasks_per_s: median(rounds.map((r) => r.alone.tasks_per_s)),
    vs_providers_alone: median(rounds.map((r) => r.vs_providers_alone)),
    rounds,
  };
}

const burstOnly = () =>
  partAlone("serverfs bridge: burst against the fake providers alone", async (live, envs) => {
    const burst = await burstVsProviders(live, envs);
    return {
      method: { burst_vs_providers: BURST_CEILING_METHOD },
      burst_vs_providers: burst,
      aims: { burst_vs_providers_alone: atLeast(burst.vs_providers_alone, 0.7) },
    };
  });

/** The faults figures alone (docs/reliability.md "The Bridge under faults"). */
const faults = () =>
  partAlone("serverfs bridge: faults", async (live, envs) => ({ method: { submit_burst: BURST_METHOD }, submit_burst: await bursts(live, envs) }));

const RESULT_CHECK = { checks: 20_000, calls: 400, rounds: 5 };
const RESULT_CHECK_METHOD = `one finished fake task (a 4 KiB final response, its manifest): its task.get answer, as JSON.parse gives it, checked against METHOD_RESULTS["task.get"] ${RESULT_CHECK.checks} times in process (µs per check); BridgeClient.call("task.get") ${RESULT_CHECK.calls} times one after another, each a fresh connection as the MCP side makes it, the check included (p50 ms); ${RESULT_CHECK.rounds} rounds, medians; share = check ÷ call`;

/** What the client's check of every result costs on `task.get`, against the call it is part of. */
const resultCheck = () =>
  partAlone("serverfs bridge: the client's result check", async (live, envs) => {
    const env = bridgeEnv({ lifecycle: LIFECYCLE });
    envs.add(env);
    const { bridge } = await timedStart(env, live);
    const { task_id } = await call<{ task_id: string }>(env.socketPath, "task.submit", {
      runtime: "fake",
      workdir: "repo",
      path: "",
      profile: "review",
      prompt: `complete:${"r".repeat(4096)}`,
    });
    await waitForTask(env.socketPath, task_id, isTerminalTask);
    const answer = await call(env.socketPath, "task.get", { task_id });
    const client = new BridgeClient({ socketPath: env.socketPath, timeoutMs: 30_000, knownPaths: [] });
    const rounds: { check_us: number; call_p50_ms: number }[] = [];
    for (let round = 1; round <= RESULT_CHECK.rounds; round++) {
      log(`result check ${round}/${RESULT_CHECK.rounds}`);
      const began = performance.now();
      for (let i = 0; i < RESULT_CHECK.checks; i++) if (!v.safeParse(METHOD_RESULTS["task.get"], answer).success) throw new Error("the answer does not fit");
      const checkUs = ((performance.now() - began) * 1000) / RESULT_CHECK.checks;
      const calls: number[] = [];
      for (let i = 0; i < RESULT_CHECK.calls; i++) {
        const started = performance.now();
        await client.call("task.get", { task_id });
        calls.push(performance.now() - started);
      }
      rounds.push({ check_us: Math.round(checkUs * 100) / 100, call_p50_ms: ms(median(calls)) });
    }
    await stopBridge(bridge, live);
    const checkUs = median(rounds.map((r) => r.check_us));
    const callMs = median(rounds.map((r) => r.call_p50_ms));
    return {
      method: { result_check: RESULT_CHECK_METHOD },
      result_check: { check_us: checkUs, call_p50_ms: callMs, share: Math.round((checkUs / 1000 / callMs) * 10_000) / 10_000, rounds },
    };
  });

if (process.argv[2] === "--echo-server") serveEcho(process.argv[3]!);
else if (process.argv[2] === "--result-check") await resultCheck();
else if (process.argv[2] === "--faults") await faults();
else if (process.argv[2] === "--lines") await longLines();
else if (process.argv[2] === "--burst") await burstOnly();
else await main();
