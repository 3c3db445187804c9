/**
 * What one long provider line costs the Bridge (docs/performance.md, "Long provider lines"): for each
 * size, a fresh `serverfs bridge` runs one fake task whose provider writes a single line of exactly
 * that many bytes, and the Bridge's peak RSS (VmHWM) is set against its settled idle RSS. Two kinds
 * of line: an `agent_message` (the `big:` prompt; the event keeps 32 KiB) and a `final` (the
 * `repeat:` prompt; spooled up to 8 MiB, else the task fails AGENT_RESULT_TOO_LARGE). The aim is a
 * peak under the idle RSS plus twice the line.
 */
import {
  type BridgeEnv,
  type BridgeProcess,
  bridgeEnv,
  call,
  isTerminalTask,
  startBridgeProcess,
  waitForTask,
} from "../../../test/helpers/bridge.ts";
import { peakRssMb, rssMb } from "./bridge-rss.ts";
import { median } from "./measure.ts";

const MIB = 1024 * 1024;
const MAX_SPOOLED_RESULT_BYTES = 8 * MIB;

export type LineKind = "agent_message" | "final";

/** The line's bytes (its newline not counted) around a text of `n` ASCII bytes. */
const frame = (kind: LineKind): number => `{"type":"${kind}","text":""}`.length;

export interface LineMemory {
  line_mib: number;
  kind: LineKind;
  line_mb: number;
  idle_mb: number;
  peak_mb: number;
  /** idle + 2 × the line */
  aim_mb: number;
  met: boolean;
  task: { status: string; error_code: string | null; ms: number };
}

const mb = (bytes: number): number => Math.round(bytes / 1e4) / 100;

async function settledRss(pid: number): Promise<number> {
  await Bun.sleep(1_000);
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    samples.push(rssMb(pid));
    await Bun.sleep(100);
  }
  return median(samples);
}

/** The prompt whose provider writes one `kind` line of exactly `bytes` bytes. */
export function linePrompt(kind: LineKind, bytes: number): string {
  const text = bytes - frame(kind);
  return kind === "agent_message" ? `big:${text}:x` : `repeat:${text}:x`;
}

async function measureOne(kind: LineKind, lineMib: number, live: Set<BridgeProcess>, envs: Set<BridgeEnv>): Promise<LineMemory> {
  const env = bridgeEnv({ lifecycle: { maintenance_interval_seconds: 30 } });
  envs.add(env);
  const bridge = await startBridgeProcess(env);
  live.add(bridge);
  const pid = bridge.proc.pid;
  const idleMb = await settledRss(pid);
  const lineBytes = lineMib * MIB;
  const began = performance.now();
  const { task_id } = await call<{ task_id: string }>(env.socketPath, "task.submit", {
    runtime: "fake",
    workdir: "repo",
    path: "",
    profile: "review",
    prompt: linePrompt(kind, lineBytes),
  });
  const task = await waitForTask(env.socketPath, task_id, isTerminalTask, 180_000);
  const elapsed = performance.now() - began;
  const peakMb = peakRssMb(pid);
  const textBytes = lineBytes - frame(kind);
  const expected = kind === "final" && textBytes > MAX_SPOOLED_RESULT_BYTES ? "failed" : "succeeded";
  if (task["status"] !== expected) throw new Error(`a ${lineMib} MiB ${kind} line ended ${String(task["status"])}, not ${expected}`);
  const code = await bridge.stop();
  live.delete(bridge);
  if (code !== 0) throw new Error(`the Bridge exited with ${code}`);
  env.dir.remove();
  envs.delete(env);
  const aimMb = Math.round((idleMb + (2 * lineBytes) / 1e6) * 100) / 100;
  return {
    line_mib: lineMib,
    kind,
    line_mb: mb(lineBytes),
    idle_mb: idleMb,
    peak_mb: peakMb,
    aim_mb: aimMb,
    met: peakMb <= aimMb,
    task: { status: String(task["status"]), error_code: (task["error_code"] as string | null) ?? null, ms: Math.round(elapsed) },
  };
}

/** Every size with both kinds, one fresh Bridge each; `log` gets one progress line per run. */
export async function lineMemory(
  sizesMib: readonly number[],
  live: Set<BridgeProcess>,
  envs: Set<BridgeEnv>,
  log: (line: string) => void,
): Promise<LineMemory[]> {
  const out: LineMemory[] = [];
  for (const size of sizesMib) {
    for (const kind of ["agent_message", "final"] as const) {
      log(`a ${size} MiB ${kind} line`);
      const r = await measureOne(kind, size, live, envs);
      log(`  idle ${r.idle_mb} MB, peak ${r.peak_mb} MB (aim ${r.aim_mb} MB)`);
      out.push(r);
    }
  }
  return out;
}
