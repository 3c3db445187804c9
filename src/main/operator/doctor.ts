/**
 * `serverfs doctor [--config F]` (docs/cli.md): one line per check — `ok`, `warn` or `fail`
 * and a plain-words reason — and exit 0 when nothing failed, else 1. It changes nothing.
 *
 * Checks, in order: the config loads; each workdir's `path` (and `mcp_path` when set) is a
 * directory; `state_dir`, `lock_dir`, `lock_dir/active` and the socket's directory are private
 * directories of this user with the Bridge's modes (missing is a warning: the Bridge creates them);
 * the sixteen lock files; whether a Bridge answers on the socket and accepts this user; every guard
 * in `active/` and what reconciliation concluded; each enabled runtime's binary and version.
 *
 * Verdicts chosen here: a Bridge that does not answer fails when `[bridge] enabled` (the Agent tools
 * need it) and only warns otherwise; a guard of a task that is still active only warns (it is the
 * normal state of a running write task), any other guard fails (writes to that slot fail closed);
 * an `mcp_path` this host cannot see only warns (it may exist only inside the MCP container).
 * The operator's own terminal may see the configured paths; nothing is written to stderr.
 */
import { lstatSync, type Stats, statSync } from "node:fs";
import { dirname, isAbsolute } from "node:path";
import { BridgeClient } from "../../shared/bridge-protocol/client.ts";
import type { RuntimeEntry } from "../../shared/bridge-protocol/results.ts";
import { type Config, ConfigError, expandHome, groupSharing, loadConfig } from "../../shared/config/load.ts";
import { ServerFsError } from "../../shared/errors.ts";
import { dirMode, fileMode, octal, ownUid, PRIVATE_DIR, permissionBits } from "../../shared/fs/modes.ts";
import { activeDir, guardedSlots, readGuard } from "../../shared/leases/guard-files.ts";
import { lockPath, SLOTS, slotName } from "../../shared/leases/lock-files.ts";
import { isTerminal } from "../../shared/store/task-states.ts";
import { enabledRuntimes } from "../../workers/runtimes.ts";
import { paint, printLine, runCommand, table } from "./output.ts";

export type DoctorVerdict = "ok" | "warn" | "fail";

export interface CheckLine {
  verdict: DoctorVerdict;
  check: string;
  reason: string;
}

type BridgeState =
  | { kind: "answering"; client: BridgeClient; runtimes: RuntimeEntry[] }
  | { kind: "refused" }
  | { kind: "unreachable" }
  | { kind: "broken"; error: ServerFsError };

/** What is known of one guard; `undefined` means nobody could be asked. */
interface GuardFact {
  slot: number;
  /** null: the guard is invalid. */
  taskId: string | null;
  /** null: the guard's task row is gone. */
  taskStatus?: string | null;
  /** null: reconciliation has not acted on the task; else its latest `task.reconciled` payload. */
  verdict?: Record<string, unknown> | null;
}

const line = (verdict: DoctorVerdict, check: string, reason: string): CheckLine => ({ verdict, check, reason });

export function runDoctor(configPath: string | undefined): Promise<number> {
  return runCommand(() => doctor(configPath));
}

async function doctor(configPath: string | undefined): Promise<number> {
  let config: Config;
  try {
    config = loadConfig({ role: "operator", configPath });
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    return report([line("fail", "config", `configuration error: ${e.message}`)]);
  }
  return report(await doctorChecks(config));
}

/** Every check of a loaded config, in order; also the console's health panel (docs/console.md). */
export async function doctorChecks(config: Config): Promise<CheckLine[]> {
  const bridge = await askBridge(config);
  return [
    line("ok", "config", `loaded ${config.source}`),
    ...workdirChecks(config),
    ...directoryChecks(config),
    ...lockFileChecks(config),
    bridgeCheck(config, bridge),
    ...guardChecks(await guardFacts(config, bridge), bridge),
    ...(await runtimeChecks(config, bridge)),
  ];
}

const VERDICT_STYLE = { ok: "green", warn: "yellow", fail: "red" } as const;

function report(lines: CheckLine[]): number {
  for (const l of table(lines.map((c) => [paint(VERDICT_STYLE[c.verdict], c.verdict), c.check, c.reason]))) printLine(l);
  const failed = lines.filter((c) => c.verdict === "fail").length;
  const warned = lines.filter((c) => c.verdict === "warn").length;
  printLine(`${failed} failed, ${warned} warning${warned === 1 ? "" : "s"}`);
  return failed === 0 ? 0 : 1;
}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

// ----- workdirs -----

function directoryVerdict(check: string, path: string, missing: DoctorVerdict): CheckLine {
  let st: Stats;
  try {
    st = statSync(path);
  } catch {
    return line(missing, check, `${path} does not exist`);
  }
  return st.isDirectory() ? line("ok", check, `${path} is a directory`) : line("fail", check, `${path} is not a directory`);
}

function workdirChecks(config: Config): CheckLine[] {
  if (config.workdirs.length === 0) return [line("warn", "workdirs", "none configured: the MCP server offers no directory (add a [[workdirs]] table)")];
  return config.workdirs.flatMap((w) => {
    const checks = [directoryVerdict(`workdir ${w.alias}`, w.bridgePath, "fail")];
    const mcpPath = config.file.workdirs.find((e) => e.slot === w.slot)?.mcp_path;
    if (mcpPath !== undefined) {
      const seen = directoryVerdict(`workdir ${w.alias} mcp_path`, expandHome(mcpPath), "warn");
      if (seen.verdict === "warn") seen.reason += " here (fine if only the MCP container sees it)";
      checks.push(seen);
    }
    return checks;
  });
}

// ----- directories and lock files -----

/** A directory the Bridge creates: missing warns; otherwise it must be ours, real, with `mode`. */
function privateDirCheck(check: string, path: string, mode: number, gid: number | null): CheckLine {
  const st = lstatOrNull(path);
  if (st === null) return line("warn", check, `${path} does not exist yet; the Bridge creates it at start`);
  if (st.isSymbolicLink()) return line("fail", check, `${path} is a symbolic link; the Bridge refuses it`);
  if (!st.isDirectory()) return line("fail", check, `${path} is not a directory`);
  if (st.uid !== ownUid()) return line("fail", check, `${path} belongs to another user (uid ${st.uid})`);
  if (permissionBits(st.mode) !== mode) return line("fail", check, `${path} has mode ${octal(st.mode)}; it must be ${octal(mode)}`);
  if (gid !== null && st.gid !== gid) return line("fail", check, `${path} belongs to group ${st.gid}; sharing needs group ${gid}`);
  return line("ok", check, `${path} is private (mode ${octal(mode)}, yours)`);
}

function directoryChecks(config: Config): CheckLine[] {
  const gid = groupSharing(config);
  const shared = dirMode(gid);
  const { stateDir, lockDir, socketPath } = config.bridge;
  const checks = [privateDirCheck("state_dir", stateDir, PRIVATE_DIR, null), privateDirCheck("lock_dir", lockDir, shared, gid)];
  if (lstatOrNull(lockDir)?.isDirectory()) checks.push(privateDirCheck("lock_dir/active", activeDir(lockDir), shared, gid));
  checks.push(privateDirCheck("socket directory", dirname(socketPath), shared, gid));
  return checks;
}

function lockFileProblem(st: Stats | null, mode: number, gid: number | null): string | null {
  if (st === null) return "is missing (MCP writes to this slot fail until the Bridge recreates it at start)";
  if (st.isSymbolicLink()) return "is a symbolic link";
  if (!st.isFile()) return "is not a regular file";
  if (st.uid !== ownUid()) return `belongs to another user (uid ${st.uid})`;
  if (permissionBits(st.mode) !== mode) return `has mode ${octal(st.mode)}; it must be ${octal(mode)}`;
  if (gid !== null && st.gid !== gid) return `belongs to group ${st.gid}; sharing needs group ${gid}`;
  return null;
}

function lockFileChecks(config: Config): CheckLine[] {
  const { lockDir } = config.bridge;
  if (!lstatOrNull(lockDir)?.isDirectory()) return [line("warn", "lock files", "not created yet; the Bridge creates all 16 at start")];
  const gid = groupSharing(config);
  const mode = fileMode(gid);
  const problems = SLOTS.flatMap((slot) => {
    const problem = lockFileProblem(lstatOrNull(lockPath(lockDir, slot)), mode, gid);
    return problem === null ? [] : [line("fail", `lock file ${slotName(slot)}.lock`, problem)];
  });
  return problems.length > 0 ? problems : [line("ok", "lock files", `all 16 present, regular, mode ${octal(mode)}`)];
}

// ----- the Bridge -----

async function askBridge(config: Config): Promise<BridgeState> {
  const client = BridgeClient.fromConfig(config);
  try {
    const { runtimes } = await client.call("runtime.list", {});
    return { kind: "answering", client, runtimes };
  } catch (e) {
    if (!(e instanceof ServerFsError)) throw e;
    if (e.code === "PEER_NOT_AUTHORIZED") return { kind: "refused" };
    if (e.code === "AGENT_BRIDGE_UNAVAILABLE") return { kind: "unreachable" };
    return { kind: "broken", error: e };
  }
}

function bridgeCheck(config: Config, bridge: BridgeState): CheckLine {
  const { socketPath } = config.bridge;
  switch (bridge.kind) {
    case "answering":
      return line("ok", "bridge", `answers on ${socketPath} and accepts this user`);
    case "refused":
      return line(
        "fail",
        "bridge",
        `answers on ${socketPath} but refuses this user (uid ${ownUid()}, gid ${process.getgid!()}); see bridge.allowed_peer_uid and allowed_peer_gid`,
      );
    case "broken":
      return line("fail", "bridge", `answers on ${socketPath} but not as expected (${bridge.error.toText()})`);
    case "unreachable": {
      const st = lstatOrNull(socketPath);
      if (st !== null && !st.isSocket()) {
        return line("fail", "bridge", `something other than a socket is at ${socketPath}; the Bridge cannot start until it is removed`);
      }
      // `init` writes `enabled = false`: then no Bridge is wanted, and `serverfs bridge` would refuse to start
      if (!config.bridge.enabled) return line("ok", "bridge", "not enabled ([bridge] enabled = false): no Agent tools, no Bridge needed");
      const there = st === null ? "nothing is there" : "a stale socket is there (the Bridge replaces it at start)";
      return line("fail", "bridge", `no Bridge answers on ${socketPath}: ${there}; start it with serverfs bridge`);
    }
  }
}

// ----- guards -----

const localGuards = (lockDir: string): GuardFact[] =>
  guardedSlots(lockDir).map((slot) => {
    const read = readGuard(lockDir, slot);
    return { slot, taskId: read.kind === "valid" ? read.guard.task_id : null };
  });

/** null: no such task; undefined: the Bridge could not say. */
async function taskStatus(client: BridgeClient, taskId: string): Promise<string | null | undefined> {
  try {
    return (await client.call("task.get", { task_id: taskId })).status;
  } catch (e) {
    if (!(e instanceof ServerFsError)) throw e;
    return e.code === "AGENT_TASK_NOT_FOUND" ? null : undefined;
  }
}

/**
 * From `recovery.list` when the Bridge answers it; else (no Bridge, or one without that method) the
 * lock directory, with each task's status from `task.get` when a Bridge answers that.
 */
async function guardFacts(config: Config, bridge: BridgeState): Promise<GuardFact[]> {
  if (bridge.kind !== "answering") return localGuards(config.bridge.lockDir);
  try {
    const { guards } = await bridge.client.call("recovery.list", {});
    return guards.map((g) => ({ slot: g.slot, taskId: g.task_id, taskStatus: g.task_status, verdict: g.last_verdict }));
  } catch (e) {
    if (!(e instanceof ServerFsError)) throw e;
  }
  const facts = localGuards(config.bridge.lockDir);
  for (const f of facts) if (f.taskId !== null) f.taskStatus = await taskStatus(bridge.client, f.taskId);
  return facts;
}

function verdictText(verdict: Record<string, unknown>): string {
  const active = verdict["provider_active"];
  const provider = active === false ? "provider gone" : active === true ? "provider still running" : "provider state unknown";
  return `${String(verdict["status"])} (${provider})`;
}

function guardLine(g: GuardFact, bridgeAnswers: boolean): CheckLine {
  const check = `guard ${slotName(g.slot)}`;
  const consequence = `; writes to slot ${g.slot} fail until it clears (see serverfs recovery list)`;
  if (g.taskId === null) return line("fail", check, `the guard file is invalid (unreadable or malformed)${consequence}`);
  if (typeof g.taskStatus === "string" && !isTerminal(g.taskStatus)) {
    return line("warn", check, `held by task ${g.taskId}, still ${g.taskStatus}; it clears when the task ends`);
  }
  const task = g.taskStatus === undefined ? "" : g.taskStatus === null ? " (its task row is gone)" : ` (task ${g.taskStatus})`;
  const concluded = !bridgeAnswers
    ? "; no Bridge is running to reconcile it (it does at start)"
    : g.verdict === undefined
      ? "; this Bridge cannot say what reconciliation concluded"
      : g.verdict === null
        ? "; reconciliation has not concluded anything yet"
        : `; reconciliation concluded ${verdictText(g.verdict)}`;
  return line("fail", check, `left by task ${g.taskId}${task}${concluded}${consequence}`);
}

function guardChecks(facts: GuardFact[], bridge: BridgeState): CheckLine[] {
  if (facts.length === 0) return [line("ok", "guards", "no active-slot guards")];
  return facts.map((g) => guardLine(g, bridge.kind === "answering"));
}

// ----- runtimes -----

/** The first `N.N.N` of a `--version` output (docs/bridge-rpc.md#runtimelist). */
const versionIn = (text: string) => /\d+\.\d+\.\d+/.exec(text)?.[0] ?? null;

type LocalProbe = { found: false } | { found: true; bin: string; exitCode: number | null; version: string | null };

/** `<bin> --version`, bounded by the runtime's probe timeout; never starts a session. */
async function probeLocally(bin: string, timeoutMs: number): Promise<LocalProbe> {
  const resolved = isAbsolute(bin) ? (lstatOrNull(bin)?.isFile() ? bin : null) : Bun.which(bin);
  if (resolved === null) return { found: false };
  let proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  try {
    proc = Bun.spawn([resolved, "--version"], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  } catch {
    return { found: true, bin: resolved, exitCode: null, version: null };
  }
  const answer = (async () => {
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { code, version: versionIn(out) ?? versionIn(err) };
  })();
  let timer: Timer | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), timeoutMs);
  });
  const result = await Promise.race([answer, timeout]);
  clearTimeout(timer);
  if (result === null) {
    proc.kill("SIGKILL");
    return { found: true, bin: resolved, exitCode: null, version: null };
  }
  return { found: true, bin: resolved, exitCode: result.code, version: result.version };
}

/**
 * A `bin` that is not absolute is looked up on the PATH of the process that runs it: doctor's is the
 * operator's shell, the Bridge's under systemd is the service manager's, which lacks ~/.local/bin,
 * npm's and nvm's directories (docs/decisions.md). Doctor cannot see the Bridge's PATH, so it says so.
 */
const pathHint = (name: string, resolved: string) =>
  `; [runtimes.${name}] bin is looked up on PATH, and a Bridge run by systemd has not your shell's: set bin = "${resolved}"`;

function localRuntimeLine(name: string, bin: string, timeoutSeconds: number, probe: LocalProbe, offered: boolean | null): CheckLine {
  const check = `runtime ${name}`;
  if (!probe.found) return line("fail", check, `binary ${bin} not found`);
  if (probe.exitCode === null) return line("fail", check, `${probe.bin} --version did not answer within ${timeoutSeconds} s`);
  if (probe.exitCode !== 0) return line("fail", check, `${probe.bin} --version exited with ${probe.exitCode}`);
  const found = `${probe.bin}, version ${probe.version ?? "unknown"}`;
  const hint = isAbsolute(bin) ? "" : pathHint(name, probe.bin);
  if (offered === false) return line("warn", check, `${found}, but the running Bridge does not offer it${hint}`);
  return line(hint === "" ? "ok" : "warn", check, `${found}${hint}`);
}

async function runtimeChecks(config: Config, bridge: BridgeState): Promise<CheckLine[]> {
  const names = enabledRuntimes(config.file);
  if (names.length === 0) return [line("ok", "runtimes", "none enabled")];
  const reported = bridge.kind === "answering" ? new Map(bridge.runtimes.map((r) => [r.name, r])) : null;
  return Promise.all(
    names.map(async (name): Promise<CheckLine> => {
      const check = `runtime ${name}`;
      const info = reported?.get(name);
      if (info?.available) return line("ok", check, `available, version ${info.version ?? "unknown"} (as the Bridge reports)`);
      const unavailable = "the Bridge cannot run it: binary not found or --version failed";
      if (name === "fake") return info === undefined ? line("ok", check, "the scripted test runtime, always available") : line("fail", check, unavailable);
      const { bin, seconds } =
        name === "codex"
          ? { bin: config.runtimes.codex.bin, seconds: config.runtimes.codex.request_timeout_seconds }
          : { bin: config.runtimes.claude.bin, seconds: config.runtimes.claude.probe_timeout_seconds };
      const path = expandHome(bin);
      if (info !== undefined) {
        // the Bridge cannot run it; a bare name this shell finds is the Bridge's PATH lacking it
        const local = isAbsolute(path) ? null : await probeLocally(path, seconds * 1000);
        const hint = local?.found ? pathHint(name, local.bin) : "";
        return line("fail", check, `${unavailable}${hint}`);
      }
      const probe = await probeLocally(path, seconds * 1000);
      return localRuntimeLine(name, path, seconds, probe, reported === null ? null : false);
    }),
  );
}
