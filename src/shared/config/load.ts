/**
 * Finding, parsing and validating the config file (docs/configuration.md), then the cross-checks
 * that no schema can express. Every failure is a `ConfigError` whose message names the key and what
 * to change: a TOML error its line and column, an unknown key the closest known one, a missing
 * directory its value. These messages go to the operator's terminal or log at startup only, never to
 * an MCP client, so naming the operator's own configured paths is the point.
 */
import { existsSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";
import * as v from "valibot";
import { suggestion } from "../did-you-mean.ts";
import { errnoReason } from "../fs/os-errors.ts";
import { readRegularFile } from "../fs/regular-file.ts";
import { type AgentMode, type ConfigFile, ConfigFileSchema, type Policy, type RuntimeName } from "./schema.ts";
import { locateTomlError } from "./toml-location.ts";

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** Which role reads the file decides which workdir path it checks (`mcp_path` or `path`). */
export type Role = "mcp" | "bridge" | "operator";

export interface Workdir {
  slot: number;
  alias: string;
  description: string | null;
  /** The directory this role uses: `mcp_path` (when set) for the MCP role, else `path`. */
  root: string;
  /** The Bridge's view of the directory (`path`). */
  bridgePath: string;
  /** Every configured absolute path of this workdir, for the error-message safety net. */
  knownPaths: string[];
  policy: Policy;
  /** Keys the workdir sets itself (for the startup audit's override count). */
  overrides: string[];
}

/** Where the audit lines are also appended (src/shared/audit-file.ts): an absolute path, its bound and how many old files stay. */
export interface AuditFileSettings {
  path: string;
  max_bytes: number;
  keep: number;
}

export interface Config {
  source: string;
  /** null: the audit lines go to stderr only. */
  audit: AuditFileSettings | null;
  file: ConfigFile;
  workdirs: Workdir[];
  limits: ConfigFile["limits"];
  server: ConfigFile["server"];
  bridge: ConfigFile["bridge"] & { socketPath: string; stateDir: string; lockDir: string };
  runtimes: ConfigFile["runtimes"];
}

export function expandHome(p: string, home = homedir()): string {
  if (p === "~") return home;
  if (p.startsWith("~/")) return join(home, p.slice(2));
  return p;
}

export interface LoadOptions {
  role: Role;
  configPath?: string | undefined;
  env?: Record<string, string | undefined>;
  cwd?: string;
}

/** The per-user config file: `$XDG_CONFIG_HOME/serverfs/serverfs.toml`, else under `~/.config`. */
export function userConfigPath(env: Record<string, string | undefined> = process.env): string {
  return join(env["XDG_CONFIG_HOME"] || join(homedir(), ".config"), "serverfs", "serverfs.toml");
}

export function findConfigFile(opts: LoadOptions): string {
  const env = opts.env ?? process.env;
  if (opts.configPath) return opts.configPath;
  if (env["SERVERFS_CONFIG"]) return env["SERVERFS_CONFIG"];
  const local = join(opts.cwd ?? process.cwd(), "serverfs.toml");
  if (existsSync(local)) return local;
  const user = userConfigPath(env);
  if (existsSync(user)) return user;
  throw new ConfigError(
    "no config file found (use --config, SERVERFS_CONFIG, ./serverfs.toml or ~/.config/serverfs/serverfs.toml); `serverfs init [DIR…]` writes a starter one",
  );
}

export function loadConfig(opts: LoadOptions): Config {
  const source = findConfigFile(opts);
  let text: string;
  try {
    text = readRegularFile(source, (kind) => new ConfigError(`the config file ${source} cannot be read (it is ${kind})`)).text;
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    throw new ConfigError(`the config file ${source} cannot be read (${errnoReason(e)})`);
  }
  let raw: unknown;
  try {
    raw = Bun.TOML.parse(text);
  } catch (e) {
    const what = (e instanceof Error ? e.message : String(e)).replace(/^TOML Parse error: /, "");
    const at = locateTomlError(text, e);
    throw new ConfigError(`the config file ${source} is not valid TOML${at ? ` (line ${at.line}, column ${at.column})` : ""}: ${what}`);
  }
  return buildConfig(raw, source, opts);
}

/** `workdirs[0].alias`-style key names, the same form the cross-checks use. */
function keyPath(issue: v.BaseIssue<unknown>): string {
  let out = "";
  for (const item of issue.path ?? []) {
    const k = (item as { key: unknown }).key;
    out += typeof k === "number" ? `[${k}]` : out === "" ? String(k) : `.${String(k)}`;
  }
  return out || "(top level)";
}

/** The keys a table of the schema takes, found by walking the issue's path (for "did you mean"). */
function knownKeys(issue: v.BaseIssue<unknown>): string[] {
  type Node = { type: string; entries?: Record<string, Node>; wrapped?: Node; item?: Node };
  let node = ConfigFileSchema as unknown as Node;
  for (const item of (issue.path ?? []).slice(0, -1)) {
    while (node.wrapped) node = node.wrapped;
    const next = typeof item.key === "number" ? node.item : node.entries?.[String(item.key)];
    if (!next) return [];
    node = next;
  }
  while (node.wrapped) node = node.wrapped;
  return Object.keys(node.entries ?? {});
}

function describeIssue(issue: v.BaseIssue<unknown>): string {
  const key = keyPath(issue);
  if (issue.expected === "never") {
    const name = String(issue.path?.at(-1)?.key ?? "");
    return `${key}: unknown key${suggestion(name, knownKeys(issue))}`;
  }
  if (issue.type === "strict_object" && issue.input === undefined) return `${key}: required key is missing`;
  const expected = issue.expected ? ` (expected ${issue.expected})` : "";
  return `${key}: invalid value${expected}`;
}

export function buildConfig(raw: unknown, source: string, opts: LoadOptions): Config {
  const parsed = v.safeParse(ConfigFileSchema, raw);
  if (!parsed.success) throw new ConfigError(describeIssue(parsed.issues[0]));
  const file = parsed.output;
  const env = opts.env ?? process.env;

  const workdirs = file.workdirs.map((w, i) => resolveWorkdir(file, w, i, opts.role));
  crossCheck(file, workdirs);

  const socketPath = resolveSocketPath(file, env);
  const bridge = {
    ...file.bridge,
    socketPath,
    stateDir: expandHome(file.bridge.state_dir),
    lockDir: expandHome(file.bridge.lock_dir),
  };
  if (opts.role === "mcp") {
    if (file.bridge.mcp_socket_path) bridge.socketPath = checkedSocketPath(expandHome(file.bridge.mcp_socket_path));
    if (file.bridge.mcp_lock_dir) bridge.lockDir = expandHome(file.bridge.mcp_lock_dir);
  }
  for (const [key, value] of [
    ["bridge.state_dir", bridge.stateDir],
    ["bridge.lock_dir", bridge.lockDir],
  ] as const) {
    if (!isAbsolute(value)) throw new ConfigError(`${key}: must be an absolute path`);
  }
  if (opts.role === "bridge") checkPeerSharing(file);
  const auditPath = file.audit.file === "" ? null : expandHome(file.audit.file);
  if (auditPath !== null && !isAbsolute(auditPath)) throw new ConfigError("audit.file: must be an absolute path");
  const audit = auditPath === null ? null : { path: auditPath, max_bytes: file.audit.max_bytes, keep: file.audit.keep };
  return { source, audit, file, workdirs, limits: file.limits, server: file.server, bridge, runtimes: file.runtimes };
}

function resolveWorkdir(file: ConfigFile, w: ConfigFile["workdirs"][number], i: number, role: Role): Workdir {
  const key = `workdirs[${i}]`;
  const overrides = (Object.keys(file.defaults) as (keyof Policy)[]).filter((k) => w[k] !== undefined);
  const policy = { ...file.defaults } as Policy;
  for (const k of overrides) (policy as Record<string, unknown>)[k] = w[k];
  // The global deny list is a floor no workdir can lower (docs/mcp-tools.md#workdirs-and-effective-policy).
  policy.extra_deny_globs = [...new Set([...file.defaults.extra_deny_globs, ...(w.extra_deny_globs ?? [])])];
  if (policy.agent_mode === "disabled") policy.agent_runtimes = [];
  else policy.agent_runtimes = [...new Set(policy.agent_runtimes)].sort();

  const bridgePath = expandHome(w.path);
  const mcpPath = w.mcp_path !== undefined ? expandHome(w.mcp_path) : undefined;
  if (!isAbsolute(bridgePath)) throw new ConfigError(`${key}.path: must be an absolute path`);
  if (mcpPath !== undefined && !isAbsolute(mcpPath)) throw new ConfigError(`${key}.mcp_path: must be an absolute path`);
  const root = role === "mcp" && mcpPath ? mcpPath : bridgePath;
  if (role !== "operator") {
    const which = role === "mcp" && mcpPath ? "mcp_path" : "path";
    let isDir = false;
    try {
      isDir = statSync(root).isDirectory();
    } catch (e) {
      const reason = (e as NodeJS.ErrnoException).code === "ENOENT" ? "does not exist" : `cannot be read (${errnoReason(e)})`;
      throw new ConfigError(`${key}.${which}: ${root} ${reason}`);
    }
    if (!isDir) throw new ConfigError(`${key}.${which}: ${root} is not a directory`);
  }
  if (w.agent_runtimes !== undefined && w.agent_runtimes.length > 0 && policy.agent_mode === "disabled") {
    throw new ConfigError(`${key}.agent_runtimes: set on a workdir whose agent_mode is disabled`);
  }
  return {
    slot: w.slot,
    alias: w.alias,
    description: w.description ?? null,
    root,
    bridgePath,
    knownPaths: [bridgePath, ...(mcpPath ? [mcpPath] : [])],
    policy,
    overrides,
  };
}

function runtimeEnabled(file: ConfigFile, name: RuntimeName): boolean {
  if (name === "fake") return file.bridge.enable_fake_runtime;
  return file.runtimes[name].enabled;
}

const MODE_RANK: Record<AgentMode, number> = { disabled: 0, review: 1, "workspace-write": 2 };
export const modeRank = (mode: AgentMode) => MODE_RANK[mode];

function crossCheck(file: ConfigFile, workdirs: Workdir[]): void {
  const slots = new Map<number, number>();
  const aliases = new Map<string, number>();
  workdirs.forEach((w, i) => {
    const key = `workdirs[${i}]`;
    const slotOwner = slots.get(w.slot);
    if (slotOwner !== undefined) throw new ConfigError(`${key}.slot: duplicate slot ${w.slot} (workdirs[${slotOwner}] has it too)`);
    const aliasOwner = aliases.get(w.alias);
    if (aliasOwner !== undefined) throw new ConfigError(`${key}.alias: duplicate alias "${w.alias}" (workdirs[${aliasOwner}] has it too)`);
    slots.set(w.slot, i);
    aliases.set(w.alias, i);
    const p = w.policy;
    if (p.agent_mode === "disabled") return;
    if (p.agent_runtimes.length === 0) throw new ConfigError(`${key}.agent_runtimes: an agent mode needs runtimes`);
    for (const r of p.agent_runtimes) {
      if (!runtimeEnabled(file, r)) {
        const where = r === "fake" ? "bridge.enable_fake_runtime" : `runtimes.${r}.enabled`;
        throw new ConfigError(`${key}.agent_runtimes: runtime ${r} is allowlisted but ${where} is false`);
      }
    }
    if (p.agent_mode === "workspace-write" && p.read_only) {
      throw new ConfigError(`${key}.agent_mode: workspace-write on a read-only workdir`);
    }
    if (p.agent_mode === "review" && p.agent_runtimes.includes("claude")) {
      throw new ConfigError(`${key}.agent_runtimes: claude cannot run review tasks (no OS-enforced read-only mode)`);
    }
    if (!file.bridge.enabled) throw new ConfigError(`${key}.agent_mode: agent mode needs bridge.enabled = true`);
  });
}

function checkedSocketPath(p: string): string {
  if (!isAbsolute(p)) throw new ConfigError("bridge.socket_path: must be an absolute path");
  if (Buffer.byteLength(p) > 107) throw new ConfigError("bridge.socket_path: longer than 107 bytes");
  return p;
}

function resolveSocketPath(file: ConfigFile, env: Record<string, string | undefined>): string {
  if (file.bridge.socket_path) return checkedSocketPath(expandHome(file.bridge.socket_path));
  const runtimeDir = env["XDG_RUNTIME_DIR"];
  const p = runtimeDir ? join(runtimeDir, "serverfs-agent-bridge", "bridge.sock") : join(homedir(), ".local/state/serverfs-agent-bridge/run/bridge.sock");
  return checkedSocketPath(p);
}

function checkPeerSharing(file: ConfigFile): void {
  const { allowed_peer_uid: uid, allowed_peer_gid: gid } = file.bridge;
  const sharing = gid !== -1 && gid !== process.getgid?.();
  if (uid !== -1 && uid !== process.getuid?.() && !sharing) {
    throw new ConfigError("bridge.allowed_peer_uid: another user needs group sharing (bridge.allowed_peer_gid)");
  }
}

/** The Bridge's view: is group sharing on, and with which group. */
export function groupSharing(config: Config): number | null {
  const gid = config.bridge.allowed_peer_gid;
  return gid !== -1 && gid !== process.getgid?.() ? gid : null;
}
