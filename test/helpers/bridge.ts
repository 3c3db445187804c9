/**
 * A real `serverfs bridge` process for integration tests: a private temp tree (workspace, state,
 * locks, socket), a config with the fake runtime, and a raw NDJSON RPC client over the Unix socket.
 */
import { Database } from "bun:sqlite";
import { readdirSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { StringDecoder } from "node:string_decoder";
import type { EventEnvelope } from "../../src/shared/store/events.ts";
import { poll } from "./poll.ts";
import { spawnCli, waitForAuditEvent } from "./process.ts";
import type { Table } from "./toml.ts";
import { type TempDir, tempDir, writeConfig } from "./workspace.ts";

export type { EventEnvelope };

export interface BridgeEnv {
  dir: TempDir;
  configPath: string;
  socketPath: string;
  stateDir: string;
  lockDir: string;
  workspace: string;
}

export interface BridgeEnvOptions {
  lifecycle?: Table;
  recovery?: Table;
  /** Extra keys for the first workdir. */
  workdir?: Table;
  extraWorkdirs?: Table[];
  config?: Table;
}

/**
 * The `[bridge]` keys and the workdir "repo" (slot 1) that put a Bridge on a tree laid out by
 * `bridgeEnv`: what its config holds before any option, and the base of another config file over the
 * same tree.
 */
export function treeTables(tree: Pick<BridgeEnv, "socketPath" | "stateDir" | "lockDir" | "workspace">): { bridge: Table; workdirs: Table[] } {
  return {
    bridge: { enabled: true, enable_fake_runtime: true, socket_path: tree.socketPath, state_dir: tree.stateDir, lock_dir: tree.lockDir },
    workdirs: [{ slot: 1, alias: "repo", path: tree.workspace, read_only: false, agent_mode: "workspace-write", agent_runtimes: ["fake"] }],
  };
}

/** The config that shows every maintenance pass: one that did nothing logs `maintenance_pass` at debug. */
export const DEBUG_LOG: Table = { server: { log_level: "debug" } };

/** Lays out a temp tree and writes its config (one workspace-write workdir "repo" on slot 1). */
export function bridgeEnv(opts: BridgeEnvOptions = {}): BridgeEnv {
  const dir = tempDir("sfs-b-");
  const workspace = dir.dir("ws");
  dir.dir("ws/src");
  dir.file("ws/README.md", "# demo\n");
  const tree = { socketPath: join(dir.path, "run", "b.sock"), stateDir: join(dir.path, "state"), lockDir: join(dir.path, "locks"), workspace };
  const base = treeTables(tree);
  const configPath = writeConfig(dir.path, {
    ...opts.config,
    bridge: { ...base.bridge, lifecycle: { maintenance_interval_seconds: 1, ...opts.lifecycle }, recovery: { ...opts.recovery } },
    workdirs: [{ ...base.workdirs[0], ...opts.workdir }, ...(opts.extraWorkdirs ?? [])],
  });
  return { dir, configPath, ...tree };
}

export type LogLine = Record<string, unknown> & { event: string; level: string };

export interface LineWait {
  /** Only lines after this many (a `lines().length` taken at the moment of interest); default: now. */
  since?: number;
  /** The how-manieth matching line to wait for; default 1. */
  count?: number;
  where?: (line: LogLine) => boolean;
  timeoutMs?: number;
}

export interface BridgeProcess {
  proc: ReturnType<typeof spawnCli>;
  /** Everything the Bridge wrote on stderr but its startup line. */
  stderr(): string;
  /** The `bridge_started` line, parsed. */
  startupLine(): Record<string, unknown> | null;
  /** Every complete log line so far, parsed, the startup line included. */
  lines(): LogLine[];
  /** Waits for a log line `event` written after the moment `wait.since` names, and returns it. */
  nextLine(event: string, wait?: LineWait): Promise<LogLine>;
  /**
   * Waits until a whole maintenance pass began and ended after `since` (default: now). Passes never
   * overlap, so the second `maintenance_pass` line from then on is one that started after it
   * (docs/deployment.md "Logs"). A pass that did nothing logs at debug, so the Bridge's config must
   * set `[server] log_level = "debug"` (`DEBUG_LOG`); it throws otherwise rather than wait in vain.
   */
  afterFullPass(since?: number): Promise<LogLine>;
  stop(signal?: NodeJS.Signals): Promise<number>;
}

/** The complete JSON lines of a log; a line still being written is left for the next look. */
const parseLines = (log: string): LogLine[] =>
  log
    .split("\n")
    .slice(0, -1)
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as LogLine);

/** `processEnv` adds variables to the Bridge's environment (which its providers inherit). */
export async function startBridgeProcess(env: BridgeEnv, processEnv?: Record<string, string>): Promise<BridgeProcess> {
  const proc = spawnCli(["bridge", "--config", env.configPath], processEnv ? { env: processEnv } : {});
  const [forWait, forLog] = proc.stderr.tee();
  let log = "";
  void (async () => {
    const reader = forLog.getReader();
    // one decoder for the stream: a character split between two chunks stays whole
    const decoder = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      log += decoder.decode(value, { stream: true });
    }
  })();
  await waitForAuditEvent(forWait, "bridge_started", 20_000);
  const lines = () => parseLines(log);
  const nextLine = async (event: string, wait: LineWait = {}): Promise<LogLine> => {
    const since = wait.since ?? lines().length;
    const count = wait.count ?? 1;
    let found: LogLine | undefined;
    await poll(
      () => {
        found = lines()
          .slice(since)
          .filter((l) => l.event === event && (wait.where?.(l) ?? true))[count - 1];
        return found !== undefined;
      },
      wait.timeoutMs ?? 20_000,
      `log line ${event} #${count}`,
    );
    return found!;
  };
  return {
    proc,
    // the startup line alone may name the operator's own files and the pid (docs/deployment.md "Logs")
    stderr: () => log.replace(/^.*"event":"bridge_started".*\n/m, ""),
    startupLine: () => JSON.parse(/^.*"event":"bridge_started".*$/m.exec(log)?.[0] ?? "null") as Record<string, unknown> | null,
    lines,
    nextLine,
    afterFullPass: (since) => {
      if (!/^log_level = "debug"$/m.test(readFileSync(env.configPath, "utf8"))) {
        throw new Error("afterFullPass needs the Bridge at log_level debug (bridgeEnv({ config: DEBUG_LOG })): an idle pass logs at debug");
      }
      return nextLine("maintenance_pass", { since, count: 2 });
    },
    async stop(signal = "SIGTERM") {
      proc.kill(signal);
      return proc.exited;
    },
  };
}

export interface RpcResponse {
  request_id: string | null;
  ok: boolean;
  result?: Record<string, unknown>;
  error?: { code: string; message: string };
}

let counter = 0;

/** Sends raw lines on one connection and collects one response line per request. */
export function rpcLines(socketPath: string, lines: string[], expect = lines.length, timeoutMs = 30_000): Promise<RpcResponse[]> {
  return new Promise((resolve, reject) => {
    const sock = connect(socketPath);
    // a character split between two reads must not become U+FFFD
    const decoder = new StringDecoder("utf8");
    let buf = "";
    const out: RpcResponse[] = [];
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`rpc timeout (${out.length}/${expect} responses)`));
    }, timeoutMs);
    sock.on("connect", () => sock.write(lines.map((l) => `${l}\n`).join("")));
    sock.on("data", (d) => {
      buf += decoder.write(d);
      let nl = buf.indexOf("\n");
      while (nl >= 0) {
        out.push(JSON.parse(buf.slice(0, nl)));
        buf = buf.slice(nl + 1);
        nl = buf.indexOf("\n");
      }
      if (out.length >= expect) {
        clearTimeout(timer);
        sock.end();
        resolve(out);
      }
    });
    sock.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    sock.on("close", () => {
      clearTimeout(timer);
      if (out.length < expect) resolve(out);
    });
  });
}

export async function rpc(socketPath: string, method: string, params: Record<string, unknown> = {}): Promise<RpcResponse> {
  const line = JSON.stringify({ protocol_version: 1, request_id: `t_${++counter}`, method, params });
  const [r] = await rpcLines(socketPath, [line]);
  return r!;
}

/** The result of a call that must succeed. */
export async function call<T = Record<string, unknown>>(socketPath: string, method: string, params: Record<string, unknown> = {}): Promise<T> {
  const r = await rpc(socketPath, method, params);
  if (!r.ok) throw new Error(`${method} failed: ${r.error?.code}: ${r.error?.message}`);
  return r.result as T;
}

/** Polls task.get until `until(task)` holds. */
export async function waitForTask(socketPath: string, taskId: string, until: (t: Record<string, unknown>) => boolean, timeoutMs = 20_000) {
  let last: Record<string, unknown> = {};
  await poll(
    async () => {
      last = await call(socketPath, "task.get", { task_id: taskId });
      return until(last);
    },
    timeoutMs,
    () => `task ${taskId} (stuck in ${String(last["status"])}) reaching the state`,
  );
  return last;
}

export const TERMINAL = new Set(["succeeded", "failed", "cancelled", "interrupted"]);
export const isTerminalTask = (t: Record<string, unknown>) => TERMINAL.has(String(t["status"]));

/** `task.submit` for the fake runtime on "repo" as a `review` task (no lease), unless `params` says otherwise. */
export function submitTask(socketPath: string, params: Record<string, unknown>): Promise<RpcResponse> {
  return rpc(socketPath, "task.submit", { runtime: "fake", workdir: "repo", path: "", profile: "review", ...params });
}

/** `submitTask` that must be accepted: its task id. */
export async function submitAccepted(socketPath: string, params: Record<string, unknown>): Promise<string> {
  const r = await submitTask(socketPath, params);
  if (!r.ok) throw new Error(`submit failed: ${r.error?.code}: ${r.error?.message}`);
  return r.result!["task_id"] as string;
}

/** The error code of a failed response (undefined for a success). */
export const codeOf = (r: RpcResponse): string | undefined => r.error?.code;

/** Every event of a task, read page by page with the exclusive cursor. */
export async function allEvents(socketPath: string, taskId: string): Promise<EventEnvelope[]> {
  const out: EventEnvelope[] = [];
  for (let after = 0; ; ) {
    const page = await call<{ events: EventEnvelope[]; next_after_event_id: number }>(socketPath, "task.events", {
      task_id: taskId,
      after_event_id: after,
      limit: 500,
    });
    if (page.events.length === 0) return out;
    out.push(...page.events);
    after = page.next_after_event_id;
  }
}

/** The provider mark the Bridge recorded for a task (never returned over RPC), read from its database. */
export function recordedMark(stateDir: string, taskId: string): string {
  const db = new Database(join(stateDir, "state.sqlite3"));
  try {
    db.run("PRAGMA busy_timeout = 5000");
    return db.query<{ provider_mark: string }, [string]>("SELECT provider_mark FROM tasks WHERE task_id = ?").get(taskId)!.provider_mark;
  } finally {
    db.close();
  }
}

/** Live processes whose environment carries SERVERFS_PROVIDER_MARK=<mark> (docs/task-model.md#process-group-proof). */
export function markedProcesses(mark: string): string[] {
  const needle = `SERVERFS_PROVIDER_MARK=${mark}`;
  return readdirSync("/proc").filter((pid) => {
    if (!/^\d+$/.test(pid)) return false;
    try {
      return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0] !== "Z" && readFileSync(`/proc/${pid}/environ`).includes(needle);
    } catch {
      return false; // exited meanwhile, or not ours
    }
  });
}
