/**
 * The process-group proof of docs/task-model.md#process-group-proof, from `/proc` only. Usable from any thread; it keeps no
 * state between calls.
 *
 * Offers:
 * - `readProcStat(pid)`: state, process group and start time (field 22) of one process, or null.
 * - `checkProcessGroup(pgid, startTime, mark)` → `"alive" | "gone" | "cannot_check"`.
 * - `terminateProcessGroup(pgid, startTime, mark, bounds?)` → `{ proven }`: SIGTERM, grace, SIGKILL,
 *   verify; proven only when the check then reads "gone".
 * - `proveStopped(pgid, startTime, mark, stopRequested)` → `GroupVerdict`: the end of a run's proof, terminating
 *   what is left.
 * - `liveMarks()`: every provider mark a live process of our uid carries, from one pass over `/proc`.
 * - `PROVIDER_MARK_VARIABLE`, `LEADER_WAIT_MS`, `DEFAULT_TERMINATE_BOUNDS`, `KILL_BOUNDS`, types `GroupVerdict`,
 *   `ProcStat`, `TerminateBounds`.
 *
 * "Gone" always also requires that no live process of our uid carries `SERVERFS_PROVIDER_MARK=<mark>`,
 * because shells and sandboxes may move descendants out of the group. With no recorded group but a
 * mark (row T6), the mark scan alone decides.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";

export const PROVIDER_MARK_VARIABLE = "SERVERFS_PROVIDER_MARK";

export type GroupVerdict = "alive" | "gone" | "cannot_check";

export interface ProcStat {
  pid: number;
  /** Field 3: R, S, D, Z, X, ... */
  state: string;
  /** Field 5. */
  pgrp: number;
  /** Field 22, clock ticks since boot. */
  startTime: number;
}

export interface TerminateBounds {
  /** How long to wait after SIGTERM before SIGKILL; 0 sends no SIGTERM at all. */
  graceMs: number;
  /** How long to wait after SIGKILL for the check to read gone. */
  verifyMs: number;
  pollMs: number;
}

/**
 * How long the end of a run waits for the provider's leader once its input is closed (and, for a
 * cancel or a deadline, after the interrupt) before the group check: docs/task-model.md#the-finally-path step 1.
 */
export const LEADER_WAIT_MS = 10_000;

export const DEFAULT_TERMINATE_BOUNDS: TerminateBounds = { graceMs: 5000, verifyMs: 5000, pollMs: 100 };

/**
 * Stopping a cancelled or timed-out run (docs/bridge-rpc.md#taskcancel step 5): the runtime's interrupt and the 10 s
 * wait for the leader were its grace, so the group gets SIGKILL at once and 5 s to read gone.
 */
export const KILL_BOUNDS: TerminateBounds = { graceMs: 0, verifyMs: 5000, pollMs: 100 };

/** Parses `/proc/<pid>/stat` after the last `)`, since the command name may hold spaces and parens. */
export function readProcStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return null;
  }
  const close = text.lastIndexOf(")");
  if (close < 0) return null;
  // fields from 3 (state) on; field n is at index n - 3
  const fields = text.slice(close + 2).split(" ");
  const pgrp = Number(fields[2]);
  const startTime = Number(fields[19]);
  if (!fields[0] || !Number.isSafeInteger(pgrp) || !Number.isSafeInteger(startTime)) return null;
  return { pid, state: fields[0], pgrp, startTime };
}

const isDead = (s: ProcStat): boolean => s.state === "Z" || s.state === "X";

const procAvailable = (): boolean => existsSync("/proc/self/stat");

function ownerOf(pid: number): number | null {
  try {
    return statSync(`/proc/${pid}`).uid;
  } catch {
    return null;
  }
}

function carriesMark(pid: number, entry: Buffer): boolean {
  let environ: Buffer;
  try {
    environ = readFileSync(`/proc/${pid}/environ`);
  } catch {
    return false;
  }
  for (let at = environ.indexOf(entry); at >= 0; at = environ.indexOf(entry, at + 1)) {
    const starts = at === 0 || environ[at - 1] === 0;
    const end = at + entry.length;
    if (starts && (end === environ.length || environ[end] === 0)) return true;
  }
  return false;
}

const MARK_PREFIX = Buffer.from(`${PROVIDER_MARK_VARIABLE}=`);

/** The mark values in one environment block (`NAME=value` entries, each ended by NUL). */
function marksIn(environ: Buffer, into: Set<string>): void {
  for (let at = environ.indexOf(MARK_PREFIX); at >= 0; at = environ.indexOf(MARK_PREFIX, at + 1)) {
    if (at > 0 && environ[at - 1] !== 0) continue;
    const end = environ.indexOf(0, at);
    into.add(environ.toString("latin1", at + MARK_PREFIX.length, end < 0 ? environ.length : end));
  }
}

/**
 * Every mark carried by a live process of our uid. Startup uses it to find what a run left behind when
 * a crash cut its finally path short: a terminal task has no guard to point at it (review tasks never
 * have one), but whatever its provider started inherited the mark.
 */
export function liveMarks(): string[] {
  const me = process.getuid?.() ?? -1;
  const marks = new Set<string>();
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return [];
  }
  for (const name of names) {
    const pid = Number(name);
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) continue;
    const stat = readProcStat(pid);
    if (stat === null || isDead(stat) || ownerOf(pid) !== me) continue;
    try {
      marksIn(readFileSync(`/proc/${pid}/environ`), marks);
    } catch {
      // exited meanwhile
    }
  }
  return [...marks];
}

/** What one pass over `/proc` found for a recorded provider. */
interface Survey {
  alive: boolean;
  /** Live members of the group (field 5 == pgid). */
  members: number;
  /** The leader identified by its start time, when it has left the group. */
  strayLeader: number | null;
  /** Live marked processes outside the group. */
  marked: number[];
  /** A process we would have to signal belongs to another uid. */
  foreign: boolean;
}

function survey(pgid: number | null, startTime: number | null, mark: string | null): Survey {
  const me = process.getuid?.() ?? -1;
  const entry = mark === null ? null : Buffer.from(`${PROVIDER_MARK_VARIABLE}=${mark}`);
  const out: Survey = { alive: false, members: 0, strayLeader: null, marked: [], foreign: false };
  let groupCounts = pgid !== null && startTime !== null;
  let strayCandidate: number | null = null;
  if (groupCounts) {
    const leader = readProcStat(pgid!);
    // a different process under the leader's id: the kernel frees an id only once its group is empty
    if (leader !== null && leader.startTime !== startTime) groupCounts = false;
    else if (leader !== null && leader.pgrp !== pgid) strayCandidate = pgid;
  }
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    names = [];
  }
  for (const name of names) {
    const pid = Number(name);
    if (!Number.isSafeInteger(pid) || pid <= 0) continue;
    const stat = readProcStat(pid);
    if (stat === null || isDead(stat)) continue; // vanished mid-scan, or no longer running
    const inGroup = groupCounts && stat.pgrp === pgid;
    const stray = pid === strayCandidate;
    if (!inGroup && !stray && entry === null) continue;
    const owner = ownerOf(pid);
    if (owner === null) continue;
    if (inGroup || stray) {
      if (inGroup) out.members++;
      else out.strayLeader = pid;
      if (owner !== me) out.foreign = true;
    } else if (owner === me && carriesMark(pid, entry!)) {
      // only our own uid's environments are read
      out.marked.push(pid);
    }
  }
  out.alive = out.members > 0 || out.strayLeader !== null || out.marked.length > 0;
  return out;
}

/** docs/task-model.md#process-group-proof group check for a recorded `(pgid, startTime)` and marker. */
export function checkProcessGroup(pgid: number | null, startTime: number | null, mark: string | null): GroupVerdict {
  if (!procAvailable()) return "cannot_check";
  const recorded = pgid !== null && startTime !== null;
  if (!recorded && mark === null) return "cannot_check";
  if (recorded) {
    const leader = readProcStat(pgid!);
    if (leader !== null && leader.startTime === startTime && !isDead(leader)) return "alive";
  }
  return survey(pgid, startTime, mark).alive ? "alive" : "gone";
}

type SignalResult = "sent" | "refused";

function signal(pid: number, sig: NodeJS.Signals): SignalResult {
  try {
    process.kill(pid, sig);
    return "sent";
  } catch (e) {
    // ESRCH: already gone, which the next check confirms
    return (e as NodeJS.ErrnoException).code === "ESRCH" ? "sent" : "refused";
  }
}

function signalAll(pgid: number | null, s: Survey, sig: NodeJS.Signals): SignalResult {
  const targets: number[] = [];
  if (s.members > 0 && pgid !== null) targets.push(-pgid);
  if (s.strayLeader !== null) targets.push(s.strayLeader);
  targets.push(...s.marked);
  let result: SignalResult = "sent";
  for (const t of targets) if (signal(t, sig) === "refused") result = "refused";
  return result;
}

/** Polls until the group reads gone or `ms` pass on the monotonic clock, so a step of the system clock neither cuts a grace short nor stretches it. */
async function goneWithin(pgid: number | null, startTime: number | null, mark: string | null, ms: number, pollMs: number): Promise<boolean> {
  const until = performance.now() + ms;
  for (;;) {
    if (checkProcessGroup(pgid, startTime, mark) === "gone") return true;
    if (performance.now() >= until) return false;
    await Bun.sleep(Math.min(pollMs, Math.max(1, until - performance.now())));
  }
}

/**
 * Terminates a provider's group and its marked strays, then proves it gone. Signals only processes
 * that are alive and all of our uid; EPERM or survivors leave it unproven.
 */
export async function terminateProcessGroup(
  pgid: number | null,
  startTime: number | null,
  mark: string | null,
  bounds: TerminateBounds = DEFAULT_TERMINATE_BOUNDS,
): Promise<{ proven: boolean }> {
  const phases: [NodeJS.Signals, number][] = [
    ...(bounds.graceMs > 0 ? [["SIGTERM", bounds.graceMs] as [NodeJS.Signals, number]] : []),
    ["SIGKILL", bounds.verifyMs],
  ];
  for (const [sig, windowMs] of phases) {
    const verdict = checkProcessGroup(pgid, startTime, mark);
    if (verdict !== "alive") return { proven: verdict === "gone" };
    const s = survey(pgid, startTime, mark);
    if (s.foreign) return { proven: false };
    if (signalAll(pgid, s, sig) === "refused") return { proven: false };
    if (await goneWithin(pgid, startTime, mark, windowMs, bounds.pollMs)) return { proven: true };
  }
  return { proven: false };
}

/**
 * The end of a run (docs/task-model.md#the-finally-path, step 1): the group check, and for members that are
 * left a termination. A run that was asked to stop already had the runtime's interrupt and the 10 s wait
 * for its leader as its grace, so what is left gets SIGKILL at once. Run by the provider worker for the
 * runs it reports, so its `/proc` passes stay off the main thread; the main thread runs it only for a run
 * whose worker was lost.
 */
export async function proveStopped(pgid: number | null, startTime: number | null, mark: string | null, stopRequested: boolean): Promise<GroupVerdict> {
  const verdict = checkProcessGroup(pgid, startTime, mark);
  if (verdict !== "alive") return verdict;
  if ((await terminateProcessGroup(pgid, startTime, mark, stopRequested ? KILL_BOUNDS : DEFAULT_TERMINATE_BOUNDS)).proven) return "gone";
  return checkProcessGroup(pgid, startTime, mark) === "cannot_check" ? "cannot_check" : "alive";
}
