import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { buildConfig, ConfigError, findConfigFile, type Role } from "../../src/shared/config/load.ts";

const dir = mkdtempSync(join(tmpdir(), "serverfs-config-"));
const ws = join(dir, "ws");
mkdirSync(ws);
writeFileSync(join(dir, "file"), "");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const build = (raw: unknown, role: Role = "mcp") => buildConfig(raw, "test.toml", { role, env: {} });
/** A refusal names the key; only the checks about a path value name that value (for the operator). */
const refuses = (raw: unknown, key: RegExp, role: Role = "mcp", namesValue = false) => {
  expect(() => build(raw, role)).toThrow(ConfigError);
  try {
    build(raw, role);
  } catch (e) {
    expect((e as Error).message).toMatch(key);
    if (!namesValue) expect((e as Error).message).not.toContain(dir);
  }
};
const wd = (extra: Record<string, unknown> = {}) => ({ slot: 1, alias: "repo", path: ws, ...extra });

describe("docs/configuration.md defaults", () => {
  test("an empty file yields every documented default", () => {
    const c = build({});
    expect(c.server.log_level).toBe("info");
    expect(c.server.elicitation).toBe(true);
    expect(c.server.protocol_revisions).toEqual(["2025-11-25", "2026-07-28"]);
    expect(c.limits).toEqual({
      default_list_limit: 100,
      max_list_entries: 500,
      default_search_results: 50,
      max_search_results: 100,
      max_walk_entries: 200000,
      search_timeout_seconds: 15,
      search_max_file_bytes: 52428800,
      max_edits_per_call: 50,
      mutation_lock_wait_ms: 2000,
      max_scan_bytes: 268435456,
      search_workers: Math.max(1, availableParallelism()),
      max_concurrent_heavy_calls: 2 * Math.max(1, availableParallelism()),
    });
    expect(c.bridge.enabled).toBe(false);
    expect(c.bridge.rpc_timeout_seconds).toBe(30);
    expect(c.bridge.lifecycle).toEqual({
      task_timeout_seconds: 86400,
      interaction_timeout_seconds: 0,
      retention_hours: 168,
      max_active_tasks: 4,
      maintenance_interval_seconds: 30,
    });
    expect(c.bridge.recovery.terminate_orphans).toBe(true);
    expect(c.runtimes.codex.bin).toBe("codex");
    expect(c.runtimes.claude.probe_timeout_seconds).toBe(5);
  });

  test("workdirs are read-only by default and inherit [defaults]", () => {
    const c = build({ defaults: { max_read_lines: 7 }, workdirs: [wd()] });
    expect(c.workdirs[0]!.policy.read_only).toBe(true);
    expect(c.workdirs[0]!.policy.max_read_lines).toBe(7);
  });

  test("extra_deny_globs is the union of the defaults' and the workdir's lists", () => {
    const c = build({ defaults: { extra_deny_globs: ["*.secret"] }, workdirs: [wd({ extra_deny_globs: ["build/**"] })] });
    expect(c.workdirs[0]!.policy.extra_deny_globs).toEqual(["*.secret", "build/**"]);
  });

  test("the socket path defaults under XDG_RUNTIME_DIR when it is set", () => {
    const c = buildConfig({}, "t", { role: "mcp", env: { XDG_RUNTIME_DIR: "/run/user/1" } });
    expect(c.bridge.socketPath).toBe("/run/user/1/serverfs-agent-bridge/bridge.sock");
  });
});

describe("docs/configuration.md validation: unknown keys and wrong types name the key", () => {
  test("unknown top-level key", () => refuses({ bogus: 1 }, /^bogus: unknown key/));
  test("unknown nested key", () => refuses({ bridge: { lifecycle: { nope: 1 } } }, /bridge\.lifecycle\.nope: unknown key/));
  test("an unknown key close to a known one names it", () => {
    refuses({ server: { log_levl: "info" } }, /^server\.log_levl: unknown key \(did you mean log_level\?\)$/);
    refuses({ workdirs: [wd({ read_onyl: true })] }, /^workdirs\[0\]\.read_onyl: unknown key \(did you mean read_only\?\)$/);
    refuses({ bridg: {} }, /^bridg: unknown key \(did you mean bridge\?\)$/);
    refuses({ bridge: { lifecycle: { zzzzzzzz: 1 } } }, /^bridge\.lifecycle\.zzzzzzzz: unknown key$/);
  });
  test("wrong type", () => refuses({ limits: { max_list_entries: "10" } }, /limits\.max_list_entries: invalid value/));
  test("lifecycle values must be positive integers", () => refuses({ bridge: { lifecycle: { task_timeout_seconds: 0 } } }, /task_timeout_seconds/));
  test("search_workers: at least 1, and any positive count is taken as it is", () => {
    refuses({ limits: { search_workers: 0 } }, /^limits\.search_workers: /);
    refuses({ limits: { search_workers: 1.5 } }, /^limits\.search_workers: /);
    expect(build({ limits: { search_workers: 1 } }).limits.search_workers).toBe(1);
    expect(build({ limits: { search_workers: 64 } }).limits.search_workers).toBe(64);
  });
  test("interaction_timeout_seconds may be 0 but not negative", () =>
    refuses({ bridge: { lifecycle: { interaction_timeout_seconds: -1 } } }, /interaction_timeout_seconds/));
  test("alias format", () => refuses({ workdirs: [wd({ alias: "9x" })] }, /workdirs\[0\]\.alias/));
  test("slot range", () => refuses({ workdirs: [wd({ slot: 17 })] }, /workdirs\[0\]\.slot/));
  test("missing required workdir key", () => refuses({ workdirs: [{ slot: 1, alias: "a" }] }, /path: required key is missing/));
  test("log_level enum", () => refuses({ server: { log_level: "loud" } }, /server\.log_level/));
  test("elicitation is a boolean", () => refuses({ server: { elicitation: "yes" } }, /server\.elicitation/));
  test("protocol_revisions names served revisions, at least one", () => {
    refuses({ server: { protocol_revisions: ["2025-06-18"] } }, /server\.protocol_revisions/);
    refuses({ server: { protocol_revisions: [] } }, /server\.protocol_revisions: invalid value \(expected >=1\)/);
    expect(build({ server: { protocol_revisions: ["2026-07-28"] } }).server.protocol_revisions).toEqual(["2026-07-28"]);
  });
});

describe("docs/configuration.md cross-checks", () => {
  const enabled = { enabled: true, enable_fake_runtime: true };
  test("duplicate slot", () => refuses({ workdirs: [wd(), wd({ alias: "b" })] }, /^workdirs\[1\]\.slot: duplicate slot 1 \(workdirs\[0\] has it too\)$/));
  test("duplicate alias", () => refuses({ workdirs: [wd(), wd({ slot: 2 })] }, /^workdirs\[1\]\.alias: duplicate alias "repo" \(workdirs\[0\] has it too\)$/));
  test("workdir path must be absolute", () => refuses({ workdirs: [wd({ path: "rel" })] }, /workdirs\[0\]\.path: must be an absolute path/));
  test("workdir path must exist; the message names the value", () =>
    refuses({ workdirs: [wd({ path: join(dir, "missing") })] }, /^workdirs\[0\]\.path: \/.*\/missing does not exist$/, "mcp", true));
  test("workdir path must be a directory; the message names the value", () =>
    refuses({ workdirs: [wd({ path: join(dir, "file") })] }, /^workdirs\[0\]\.path: \/.*\/file is not a directory$/, "mcp", true));
  test("the MCP role checks mcp_path, the Bridge role path", () => {
    const raw = { workdirs: [wd({ path: join(dir, "missing"), mcp_path: ws })] };
    expect(build(raw, "mcp").workdirs[0]!.root).toBe(ws);
    refuses(raw, /workdirs\[0\]\.path: .* does not exist/, "bridge", true);
  });
  test("an allowlisted runtime must be enabled", () =>
    refuses(
      { bridge: { enabled: true }, workdirs: [wd({ read_only: false, agent_mode: "workspace-write", agent_runtimes: ["codex"] })] },
      /runtimes\.codex\.enabled/,
    ));
  test("fake needs enable_fake_runtime", () =>
    refuses(
      { bridge: { enabled: true }, workdirs: [wd({ read_only: false, agent_mode: "workspace-write", agent_runtimes: ["fake"] })] },
      /enable_fake_runtime/,
    ));
  test("an agent mode without runtimes", () => refuses({ bridge: enabled, workdirs: [wd({ agent_mode: "review" })] }, /needs runtimes/));
  test("runtimes set on a disabled workdir", () => refuses({ bridge: enabled, workdirs: [wd({ agent_runtimes: ["fake"] })] }, /disabled/));
  test("runtimes inherited from [defaults] by a disabled workdir are not in force", () => {
    const c = build({ defaults: { agent_runtimes: ["codex"] }, workdirs: [wd()] });
    expect(c.workdirs[0]!.policy.agent_runtimes).toEqual([]);
  });
  test("workspace-write on a read-only workdir", () =>
    refuses({ bridge: enabled, workdirs: [wd({ agent_mode: "workspace-write", agent_runtimes: ["fake"] })] }, /read-only/));
  test("a review workdir may not allowlist claude", () =>
    refuses(
      { bridge: enabled, runtimes: { claude: { enabled: true } }, workdirs: [wd({ agent_mode: "review", agent_runtimes: ["claude"] })] },
      /claude cannot run review/,
    ));
  test("an agent workdir needs bridge.enabled", () =>
    refuses({ bridge: { enable_fake_runtime: true }, workdirs: [wd({ agent_mode: "review", agent_runtimes: ["fake"] })] }, /bridge\.enabled/));
  test("a socket path over 107 bytes", () => refuses({ bridge: { socket_path: `/${"s".repeat(107)}` } }, /107 bytes/));
  test("another peer uid without group sharing (Bridge role)", () =>
    refuses({ bridge: { allowed_peer_uid: (process.getuid?.() ?? 0) + 1 } }, /allowed_peer_uid/, "bridge"));
  test("a valid agent workdir loads", () => {
    const c = build({ bridge: enabled, workdirs: [wd({ read_only: false, agent_mode: "workspace-write", agent_runtimes: ["fake"] })] });
    expect(c.workdirs[0]!.policy.agent_runtimes).toEqual(["fake"]);
  });
});

describe("docs/configuration.md file search order", () => {
  test("--config wins over SERVERFS_CONFIG", () => {
    expect(findConfigFile({ role: "mcp", configPath: "/a.toml", env: { SERVERFS_CONFIG: "/b.toml" } })).toBe("/a.toml");
  });
  test("SERVERFS_CONFIG wins over ./serverfs.toml", () => {
    writeFileSync(join(dir, "serverfs.toml"), "");
    expect(findConfigFile({ role: "mcp", env: { SERVERFS_CONFIG: "/b.toml" }, cwd: dir })).toBe("/b.toml");
    expect(findConfigFile({ role: "mcp", env: {}, cwd: dir })).toBe(join(dir, "serverfs.toml"));
  });
  test("then $XDG_CONFIG_HOME/serverfs/serverfs.toml", () => {
    const xdg = join(dir, "xdg");
    mkdirSync(join(xdg, "serverfs"), { recursive: true });
    writeFileSync(join(xdg, "serverfs", "serverfs.toml"), "");
    expect(findConfigFile({ role: "mcp", env: { XDG_CONFIG_HOME: xdg }, cwd: ws })).toBe(join(xdg, "serverfs", "serverfs.toml"));
  });
});
