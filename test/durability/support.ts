/**
 * What the crash tests look at and leave behind: processes in `/proc`, the lock files and guards
 * an MCP role would see, task rows as the Bridge wrote them, and strays that ignore SIGTERM. Every
 * process a test starts, or a killed Bridge leaves, is reaped through `cleanup` in `afterAll`.
 */
import { afterAll } from "bun:test";
import { closeSync, constants, openSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { tryLockExclusive, unlock } from "../../src/shared/ffi/libc.ts";
import { newMark, newTaskId } from "../../src/shared/ids.ts";
import { guardPath, readGuard } from "../../src/shared/leases/guard-files.ts";
import { lockPath } from "../../src/shared/leases/lock-files.ts";
import { PROVIDER_MARK_VARIABLE, readProcStat, terminateProcessGroup } from "../../src/shared/process-group.ts";
import { Store, type TaskRow } from "../../src/shared/store/index.ts";
import { type BridgeEnv, type BridgeEnvOptions, type BridgeProcess, bridgeEnv } from "../helpers/bridge.ts";
import { poll } from "../helpers/poll.ts";
import { groupMembers, livePids } from "../helpers/proc-scan.ts";
import { tempDir } from "../helpers/workspace.ts";

export { carriesMark, groupMembers, isAlive, livePids } from "../helpers/proc-scan.ts";

const QUICK = { graceMs: 200, verifyMs: 3000, pollMs: 20 };

/** Fake provider processes running in `dir` (a re-run would be one of them). */
export function fakeProvidersIn(dir: string): number[] {
  return livePids((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "latin1").includes("fake-provider") && readlinkSync(`/proc/${pid}/cwd`).startsWith(dir);
    } catch {
      return false;
    }
  });
}

/** Samples `fakeProvidersIn(dir)` every 25 ms until stopped; resolves with every pid it ever saw. */
export function watchProviders(dir: string): { stop(): Promise<number[]> } {
  const seen = new Set<number>();
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const pid of fakeProvidersIn(dir)) seen.add(pid);
      await Bun.sleep(25);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return [...seen];
    },
  };
}

/** A task row as the Bridge stored it, through its own store module (a connection of our own). */
export function taskRow(stateDir: string, taskId: string): TaskRow | null {
  const store = Store.open(stateDir);
  try {
    return store.getTask(taskId);
  } finally {
    store.close();
  }
}

/** What the MCP role sees for a slot (docs/task-model.md#lease-files-and-the-active-slot-guard): it opens NN.lock read-only and never writes. */
export function mcpView(lockDir: string, slot: number): "busy" | "recovery_required" | "free" {
  const fd = openSync(lockPath(lockDir, slot), constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const r = tryLockExclusive(fd);
    if (r === "busy") return "busy";
    if (r !== "locked") throw new Error("flock failed");
    unlock(fd);
  } finally {
    closeSync(fd);
  }
  return readGuard(lockDir, slot).kind === "absent" ? "free" : "recovery_required";
}

/** Holds the slot's lock as another writer would, until released. */
export function holdLock(lockDir: string, slot: number): () => void {
  const fd = openSync(lockPath(lockDir, slot), constants.O_RDONLY | constants.O_NOFOLLOW);
  if (tryLockExclusive(fd) !== "locked") throw new Error("slot lock is held");
  return () => {
    unlock(fd);
    closeSync(fd);
  };
}

/** Writes `active/NN` as a Bridge would have left it (canonical form does not matter to a reader). */
export function writeGuard(lockDir: string, slot: number, fields: Record<string, unknown>): void {
  const guard = {
    schema_version: 1,
    slot,
    task_id: newTaskId(),
    runtime: "fake",
    workdir_alias: "repo",
    correlation_id: null,
    native_session_id: null,
    native_turn_id: null,
    provider_pgid: null,
    provider_start_time: null,
    provider_mark: null,
    created_at: new Date().toISOString(),
    updated_at: new Date().toISOString(),
    ...fields,
  };
  writeFileSync(guardPath(lockDir, slot), `${JSON.stringify(guard)}\n`, { mode: 0o600 });
}

/** The provider fields a guard records for a row. */
export const providerFields = (row: TaskRow) => ({
  task_id: row.task_id,
  workdir_alias: row.workdir_alias,
  native_session_id: row.native_session_id,
  native_turn_id: row.native_turn_id,
  provider_pgid: row.provider_pgid,
  provider_start_time: row.provider_start_time,
  provider_mark: row.provider_mark,
  created_at: row.created_at,
});

export interface Stray {
  proc: Bun.Subprocess<"ignore", "ignore", "ignore">;
  pid: number;
  startTime: number;
  mark: string;
  /** The sleeping grandchild, once it runs. */
  child(): Promise<number>;
}

const strays: Stray[] = [];

/**
 * A process group that ignores SIGTERM, as a careless provider tool might: `sh` with TERM ignored
 * and a `sleep` grandchild that inherits the ignored disposition. It carries `mark` in its
 * environment (a provider's descendant that left the group with setsid) when one is given. With
 * `termLog`, the shell instead notes each SIGTERM it gets as a line in that file and goes on waiting,
 * so a test can see the moment a termination's grace began.
 */
export function startStray(mark: string = newMark(), termLog?: string): Stray {
  const script =
    termLog === undefined ? "trap '' TERM; sleep 120 & wait" : `trap '' TERM; sleep 120 & trap 'echo term >> "$0"' TERM; while :; do wait $!; done`;
  const proc = Bun.spawn({
    cmd: ["sh", "-c", script, ...(termLog === undefined ? [] : [termLog])],
    detached: true,
    env: { ...process.env, [PROVIDER_MARK_VARIABLE]: mark },
    stdio: ["ignore", "ignore", "ignore"],
  });
  const stat = readProcStat(proc.pid);
  if (stat === null) throw new Error("stray did not start");
  const stray: Stray = {
    proc,
    pid: proc.pid,
    startTime: stat.startTime,
    mark,
    async child() {
      let found: number | undefined;
      await poll(
        () => {
          found = groupMembers(proc.pid).find((p) => p !== proc.pid);
          return found !== undefined;
        },
        10_000,
        "the stray's grandchild starting",
      );
      return found!;
    },
  };
  strays.push(stray);
  return stray;
}

/** Kills a Bridge with SIGKILL: no finally path, no shutdown — a crash. */
export async function crash(bridge: BridgeProcess): Promise<void> {
  bridge.proc.kill("SIGKILL");
  await bridge.proc.exited;
}

/**
 * afterAll: every provider group a task row records (identified by its start time and mark, so a
 * reused id is never hit), then every stray started here.
 */
export async function cleanup(stateDirs: string[]): Promise<void> {
  for (const stateDir of stateDirs) {
    let rows: TaskRow[] = [];
    try {
      const store = Store.open(stateDir);
      try {
        rows = store.listTasks({ limit: 500 }).tasks;
      } finally {
        store.close();
      }
    } catch {
      // no database: nothing was recorded
    }
    for (const r of rows) {
      if (r.provider_pgid !== null || r.provider_mark !== null) {
        await terminateProcessGroup(r.provider_pgid, r.provider_start_time, r.provider_mark, QUICK);
      }
    }
  }
  for (const s of strays.splice(0)) await terminateProcessGroup(s.pid, s.startTime, s.mark, QUICK);
}

/**
 * The Bridges a test file starts, each on a tree of its own (push them as they are made): after the
 * file every one still running is stopped with `stopWith` (SIGKILL where a test may leave one
 * mid-crash), what their tasks left running is cleaned up, and the trees are removed.
 */
export function bridgesOfFile(stopWith: NodeJS.Signals = "SIGTERM"): { envs: BridgeEnv[]; bridges: BridgeProcess[] } {
  const envs: BridgeEnv[] = [];
  const bridges: BridgeProcess[] = [];
  afterAll(async () => {
    for (const b of bridges) if (b.proc.exitCode === null && b.proc.signalCode === null) await b.stop(stopWith);
    await cleanup(envs.map((e) => e.stateDir));
    for (const e of envs) e.dir.remove();
  });
  return { envs, bridges };
}

/** Aliases of `writeEnv` workdirs: "repo" on slot 1, then "w2", "w3", ... */
export const aliasOf = (slot: number): string => (slot === 1 ? "repo" : `w${slot}`);

export interface WriteEnv {
  env: BridgeEnv;
  /** The workdir directory of each slot. */
  workspaces: string[];
  remove(): void;
}

/** A Bridge env with `slots` workspace-write workdirs for the fake runtime (slot 1 is bridgeEnv's "repo"). */
export function writeEnv(slots: number, opts: BridgeEnvOptions = {}): WriteEnv {
  const extra = tempDir("sfs-d-");
  const extraWorkdirs = Array.from({ length: slots - 1 }, (_, i) => ({
    slot: i + 2,
    alias: aliasOf(i + 2),
    path: extra.dir(aliasOf(i + 2)),
    read_only: false,
    agent_mode: "workspace-write",
    agent_runtimes: ["fake"],
  }));
  const env = bridgeEnv({ ...opts, extraWorkdirs });
  return {
    env,
    workspaces: [env.workspace, ...extraWorkdirs.map((w) => w.path)],
    remove() {
      env.dir.remove();
      extra.remove();
    },
  };
}
