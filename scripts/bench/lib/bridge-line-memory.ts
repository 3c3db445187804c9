/**
 * What one long provider line costs the Bridge (docs/performance.md, "Long provider lines"): for each
 * size, a fresh `serverfs bridge` runs one fake task whose provider writes a single line of exactly
 * that many bytes, and the Bridge's peak RSS (VmHWM) is set against its settled idle RSS. Two kinds
 * of line: an `agent_message` (the `big:` prompt; the event keeps 32 KiB) and a `final` (the
 * `repeat:` prompt; spooled up to 8 MiB, else the task fails AGENT_RESULT_TOO_LARGE). Then once the
 * largest result that can succeed: 8 MiB of text escaped into a line of about 38 MiB
 * (`max_result`), the case that keeps a whole string. The aim is a peak under the idle RSS plus twice
 * the line.
 */
import { type BridgeEnv, type BridgeProcess, bridgeEnv, call, isTerminalTask, startBridgeProcess, waitForTask } from "../../../test/helpers/bridge.ts";
import { peakRssMb, settledRss } from "./bridge-rss.ts";

const MIB = 1024 * 1024;
const MAX_SPOOLED_RESULT_BYTES = 8 * MIB;

export type LineKind = "agent_message" | "final" | "max_result";

/** The line's bytes (its newline not counted) around its text. */
const frame = (kind: LineKind): number => `{"type":"${kind === "agent_message" ? kind : "final"}","text":""}`.length;

/** 7 control characters (6 bytes each, escaped) and a euro sign: 10 bytes of text in 45 of line. */
const MAX_RESULT_PIECE = "\u0001\u0002\u0003\u0004\u0005\u0006\u0007€";
const MAX_RESULT_COUNT = Math.floor(MAX_SPOOLED_RESULT_BYTES / Buffer.byteLength(MAX_RESULT_PIECE));
const MAX_RESULT_LINE_BYTES = frame("max_result") + MAX_RESULT_COUNT * (JSON.stringify(MAX_RESULT_PIECE).length - 2);

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

/** The prompt whose provider writes one `kind` line of exactly `bytes` bytes (`max_result`: its own size). */
function linePrompt(kind: LineKind, bytes: number): string {
  const text = bytes - frame(kind);
  if (kind === "max_result") return `repeat:${MAX_RESULT_COUNT}:${MAX_RESULT_PIECE}`;
  return kind === "agent_message" ? `big:${text}:x` : `repeat:${text}:x`;
}

async function measureOne(kind: LineKind, lineBytes: number, live: Set<BridgeProcess>, envs: Set<BridgeEnv>): Promise<LineMemory> {
  const env = bridgeEnv({ lifecycle: { maintenance_interval_seconds: 30 } });
  envs.add(env);
  const bridge = await startBridgeProcess(env);
  live.add(bridge);
  const pid = bridge.proc.pid;
  const idleMb = await settledRss(pid);
  const lineMib = Math.round((lineBytes / MIB) * 100) / 100;
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
  if (kind === "max_result" && (task["result"] as { size_bytes?: number } | null)?.size_bytes !== MAX_RESULT_COUNT * Buffer.byteLength(MAX_RESULT_PIECE)) {
    throw new Error("the 8 MiB result was not stored whole");
  }
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

/** Every size with both kinds, then `max_result`, one fresh Bridge each; `log` gets one progress line per run. */
export async function lineMemory(
  sizesMib: readonly number[],
  live: Set<BridgeProcess>,
  envs: Set<BridgeEnv>,
  log: (line: string) => void,
): Promise<LineMemory[]> {
  const out: LineMemory[] = [];
  const cases: [LineKind, number][] = sizesMib.flatMap((size) => [
    ["agent_message", size * MIB] as [LineKind, number],
    ["final", size * MIB] as [LineKind, number],
  ]);
  cases.push(["max_result", MAX_RESULT_LINE_BYTES]);
  for (const [kind, bytes] of cases) {
    log(`a ${mb(bytes)} MB ${kind} line`);
    const r = await measureOne(kind, bytes, live, envs);
    log(`  idle ${r.idle_mb} MB, peak ${r.peak_mb} MB (aim ${r.aim_mb} MB)`);
    out.push(r);
  }
  return out;
}
