/**
 * `serverfs doctor` (docs/cli.md): one `ok` / `warn` / `fail` line per check, exit 0 only
 * when nothing failed. The real CLI against a real Bridge process and real directories.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type BridgeProcess, bridgeEnv, call, isTerminalTask, startBridgeProcess, submitAccepted, treeTables, waitForTask } from "../helpers/bridge.ts";
import { runCli, runToEnd } from "../helpers/process.ts";
import type { Table } from "../helpers/toml.ts";
import { useBridge } from "../helpers/use-bridge.ts";
import { SERVERFS, writeConfig } from "../helpers/workspace.ts";

const { env, submit } = useBridge();

interface Line {
  verdict: string;
  check: string;
  reason: string;
}

async function doctor(configPath: string) {
  const r = await runCli(["doctor", "--config", configPath]);
  const all = r.stdout.split("\n").filter((l) => l !== "");
  const summary = all.at(-1) ?? "";
  const checks = all.slice(0, -1).map((l): Line => {
    const m = /^(ok|warn|fail) +(\S+(?: \S+)*?) {2,}(.*)$/.exec(l);
    if (!m) throw new Error(`not a check line: ${l}`);
    return { verdict: m[1]!, check: m[2]!, reason: m[3]! };
  });
  const line = (check: string) => checks.find((c) => c.check === check);
  return { ...r, checks, summary, line };
}

/** Another config file in the healthy env's tree: its keys as `patch` rewrites them. */
function variantConfig(name: string, patch: (base: { bridge: Table; workdirs: Table[] }) => Table): string {
  return writeConfig(env.dir.path, patch(treeTables(env)), name);
}

describe("doctor on a healthy setup", () => {
  test("every check is ok and it exits 0", async () => {
    const r = await doctor(env.configPath);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    expect(r.checks.map((c) => c.check)).toEqual([
      "config",
      "workdir repo",
      "state_dir",
      "lock_dir",
      "lock_dir/active",
      "socket directory",
      "lock files",
      "bridge",
      "guards",
      "runtime fake",
    ]);
    expect(r.checks.filter((c) => c.verdict !== "ok")).toEqual([]);
    expect(r.line("lock files")?.reason).toBe("all 16 present, regular, mode 0600");
    expect(r.line("bridge")?.reason).toContain("accepts this user");
    expect(r.line("runtime fake")?.reason).toContain("version 1");
    expect(r.summary).toBe("0 failed, 0 warnings");
    expect(r.stdout).not.toContain("\x1b[");
  });
});

describe("doctor fail lines (exit 1)", () => {
  test("a workdir path that does not exist", async () => {
    const missing = join(env.dir.path, "gone");
    const config = variantConfig("missing-workdir.toml", (b) => ({ ...b, workdirs: [...b.workdirs, { slot: 2, alias: "ghost", path: missing }] }));
    const r = await doctor(config);
    expect(r.code).toBe(1);
    expect(r.line("workdir ghost")).toEqual({ verdict: "fail", check: "workdir ghost", reason: `${missing} does not exist` });
    expect(r.line("workdir repo")?.verdict).toBe("ok");
    expect(r.summary).toBe("1 failed, 0 warnings");
  });

  test("a workdir path that is a file, and an mcp_path this host cannot see (only a warning)", async () => {
    const file = env.dir.file("plain.txt", "x");
    const config = variantConfig("file-workdir.toml", (b) => ({
      ...b,
      workdirs: [
        { ...b.workdirs[0]!, mcp_path: "/container/only/repo" },
        { slot: 2, alias: "plain", path: file },
      ],
    }));
    const r = await doctor(config);
    expect(r.code).toBe(1);
    expect(r.line("workdir plain")).toEqual({ verdict: "fail", check: "workdir plain", reason: `${file} is not a directory` });
    expect(r.line("workdir repo mcp_path")?.verdict).toBe("warn");
  });

  test("a lock directory with mode 0777", async () => {
    chmodSync(env.lockDir, 0o777);
    try {
      const r = await doctor(env.configPath);
      expect(r.code).toBe(1);
      expect(r.line("lock_dir")).toEqual({ verdict: "fail", check: "lock_dir", reason: `${env.lockDir} has mode 0777; it must be 0700` });
    } finally {
      chmodSync(env.lockDir, 0o700);
    }
  });

  test("a lock file with the wrong mode, and one that is missing", async () => {
    const loose = join(env.lockDir, "05.lock");
    const gone = join(env.lockDir, "06.lock");
    chmodSync(loose, 0o644);
    unlinkSync(gone);
    try {
      const r = await doctor(env.configPath);
      expect(r.code).toBe(1);
      expect(r.line("lock file 05.lock")).toEqual({ verdict: "fail", check: "lock file 05.lock", reason: "has mode 0644; it must be 0600" });
      expect(r.line("lock file 06.lock")?.verdict).toBe("fail");
      expect(r.line("lock file 06.lock")?.reason).toStartWith("is missing");
      expect(r.line("lock files")).toBeUndefined();
    } finally {
      chmodSync(loose, 0o600);
      writeFileSync(gone, "", { mode: 0o600 });
    }
  });

  test("a guard file present names its task and says what is known of it", async () => {
    const orphan = "agt_0123456789abcdef01234567";
    const guard = join(env.lockDir, "active", "03");
    const invalid = join(env.lockDir, "active", "04");
    const now = new Date().toISOString();
    writeFileSync(
      guard,
      `${JSON.stringify({ created_at: now, correlation_id: null, runtime: "fake", schema_version: 1, slot: 3, task_id: orphan, updated_at: now, workdir_alias: "repo" })}\n`,
      { mode: 0o600 },
    );
    writeFileSync(invalid, "not json\n", { mode: 0o600 });
    try {
      const r = await doctor(env.configPath);
      expect(r.code).toBe(1);
      const g = r.line("guard 03");
      expect(g?.verdict).toBe("fail");
      expect(g?.reason).toContain(`left by task ${orphan} (its task row is gone)`);
      expect(g?.reason).toContain("writes to slot 3 fail until it clears");
      expect(r.line("guard 04")?.verdict).toBe("fail");
      expect(r.line("guard 04")?.reason).toContain("invalid");
      expect(r.line("guards")).toBeUndefined();
    } finally {
      unlinkSync(guard);
      unlinkSync(invalid);
    }
  });

  test("a runtime whose binary is missing or does not answer --version in time; a found one shows its version", async () => {
    const codex = env.dir.file("bin/codex", '#!/bin/sh\necho "codex-cli 0.41.0"\n');
    chmodSync(codex, 0o755);
    const claude = env.dir.file("bin/claude", "#!/bin/sh\nexec sleep 30\n");
    chmodSync(claude, 0o755);
    const slow = variantConfig("runtimes.toml", (b) => ({
      ...b,
      runtimes: { codex: { enabled: true, bin: codex }, claude: { enabled: true, bin: claude, probe_timeout_seconds: 1 } },
    }));
    const r = await doctor(slow);
    expect(r.code).toBe(1);
    // the running Bridge was not configured with codex, so doctor probes it here and says so
    expect(r.line("runtime codex")).toEqual({
      verdict: "warn",
      check: "runtime codex",
      reason: `${codex}, version 0.41.0, but the running Bridge does not offer it`,
    });
    expect(r.line("runtime claude")).toEqual({ verdict: "fail", check: "runtime claude", reason: `${claude} --version did not answer within 1 s` });

    const missing = variantConfig("no-runtime.toml", (b) => ({ ...b, runtimes: { claude: { enabled: true, bin: "serverfs-no-such-claude" } } }));
    expect((await doctor(missing)).line("runtime claude")).toEqual({
      verdict: "fail",
      check: "runtime claude",
      reason: "binary serverfs-no-such-claude not found",
    });
  }, 20_000);

  test("a bare runtime bin found on this shell's PATH warns that the Bridge under systemd has not that PATH, naming the absolute path", async () => {
    const dir = env.dir.dir("shellbin");
    chmodSync(env.dir.file("shellbin/serverfs-test-codex", '#!/bin/sh\necho "codex-cli 0.41.0"\n'), 0o755);
    const bare = variantConfig("bare-bin.toml", (b) => ({ ...b, runtimes: { codex: { enabled: true, bin: "serverfs-test-codex" } } }));
    const r = await runCli(["doctor", "--config", bare], { env: { PATH: `${dir}:${process.env["PATH"]}` } });
    const codexLine = r.stdout.split("\n").find((l) => l.includes("runtime codex"));
    expect(codexLine).toStartWith("warn");
    expect(codexLine).toContain(`set bin = "${join(dir, "serverfs-test-codex")}"`);
  });

  test("no config anywhere: the fail line says serverfs init writes one", async () => {
    const home = env.dir.dir("empty-home");
    const r = await runToEnd([...SERVERFS, "doctor"], { cwd: home, env: { HOME: home, XDG_CONFIG_HOME: join(home, ".config"), SERVERFS_CONFIG: "" } });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("no config file found");
    expect(r.stdout).toContain("`serverfs init [DIR…]` writes a starter one");
  });

  test("a config that does not load is one fail line with the configuration error", async () => {
    const broken = env.dir.file("broken.toml", "[bridge]\nno_such_key = 1\n");
    const r = await doctor(broken);
    expect(r.code).toBe(1);
    expect(r.checks).toEqual([{ verdict: "fail", check: "config", reason: "configuration error: bridge.no_such_key: unknown key" }]);
  });
});

describe("doctor and guards, as the Bridge's recovery.list reports them", () => {
  test("a guard held by a task that is still running is only a warning", async () => {
    const task_id = await submit({ profile: "workspace-write", prompt: "wait:" });
    try {
      await waitForTask(env.socketPath, task_id, (t) => t["status"] === "running");
      const r = await doctor(env.configPath);
      expect(r.code).toBe(0);
      expect(r.line("guard 01")).toEqual({
        verdict: "warn",
        check: "guard 01",
        reason: `held by task ${task_id}, still running; it clears when the task ends`,
      });
      expect(r.summary).toBe("0 failed, 1 warning");
    } finally {
      await call(env.socketPath, "task.cancel", { task_id });
      await waitForTask(env.socketPath, task_id, isTerminalTask);
    }
  }, 30_000);

  test("a guard that startup reconciliation had to keep fails, with what it concluded", async () => {
    const crashed = bridgeEnv({ recovery: { terminate_orphans: false } });
    let pgid: number | null = null;
    let second: BridgeProcess | null = null;
    try {
      const first = await startBridgeProcess(crashed);
      // spawn: leaves a grandchild in the provider's group, so the group outlives the killed Bridge
      const task_id = await submitAccepted(crashed.socketPath, { profile: "workspace-write", prompt: "spawn:60" });
      await waitForTask(crashed.socketPath, task_id, (t) => t["status"] === "running");
      pgid = (JSON.parse(readFileSync(join(crashed.lockDir, "active", "01"), "utf8")) as { provider_pgid: number | null }).provider_pgid;
      await first.stop("SIGKILL");
      second = await startBridgeProcess(crashed);

      const r = await doctor(crashed.configPath);
      expect(r.code).toBe(1);
      expect(r.line("guard 01")?.verdict).toBe("fail");
      expect(r.line("guard 01")?.reason).toBe(
        `left by task ${task_id} (task interrupted); reconciliation concluded UNKNOWN (provider still running); writes to slot 1 fail until it clears (see serverfs recovery list)`,
      );
    } finally {
      await second?.stop();
      if (pgid !== null) {
        try {
          process.kill(-pgid, "SIGKILL");
        } catch {
          // already gone
        }
      }
      crashed.dir.remove();
    }
  }, 60_000);
});

describe("doctor without a running Bridge", () => {
  test("with [bridge] enabled it fails the bridge check; directories the Bridge creates are only warnings", async () => {
    const idle = bridgeEnv();
    try {
      const r = await doctor(idle.configPath);
      expect(r.code).toBe(1);
      expect(r.line("bridge")).toEqual({
        verdict: "fail",
        check: "bridge",
        reason: `no Bridge answers on ${idle.socketPath}: nothing is there; start it with serverfs bridge`,
      });
      for (const check of ["state_dir", "lock_dir", "socket directory", "lock files"]) expect(r.line(check)?.verdict).toBe("warn");
      expect(r.line("runtime fake")?.verdict).toBe("ok");
      expect(r.summary).toBe("1 failed, 4 warnings");
    } finally {
      idle.dir.remove();
    }
  });

  test("a guard left behind is a fail line saying no Bridge is there to reconcile it", async () => {
    const idle = bridgeEnv();
    try {
      mkdirSync(join(idle.lockDir, "active"), { recursive: true, mode: 0o700 });
      const now = new Date().toISOString();
      writeFileSync(
        join(idle.lockDir, "active", "01"),
        JSON.stringify({
          schema_version: 1,
          slot: 1,
          task_id: "agt_aaaaaaaaaaaaaaaaaaaaaaaa",
          runtime: "fake",
          workdir_alias: "repo",
          created_at: now,
          updated_at: now,
        }),
        { mode: 0o600 },
      );
      const r = await doctor(idle.configPath);
      expect(r.line("guard 01")?.verdict).toBe("fail");
      expect(r.line("guard 01")?.reason).toContain("no Bridge is running to reconcile it");
    } finally {
      idle.dir.remove();
    }
  });

  test("with [bridge] enabled = false (what init writes) no Bridge is needed: ok, without telling to start one", async () => {
    const idle = bridgeEnv();
    try {
      const config = writeConfig(
        idle.dir.path,
        {
          bridge: { enabled: false, socket_path: idle.socketPath, state_dir: idle.stateDir, lock_dir: idle.lockDir },
          workdirs: [{ slot: 1, alias: "repo", path: idle.workspace }],
        },
        "disabled.toml",
      );
      const r = await doctor(config);
      expect(r.code).toBe(0);
      // `serverfs bridge` refuses to start on this config, so doctor must not send the operator there
      expect(r.line("bridge")).toEqual({ verdict: "ok", check: "bridge", reason: "not enabled ([bridge] enabled = false): no Agent tools, no Bridge needed" });
      expect(r.line("runtimes")).toEqual({ verdict: "ok", check: "runtimes", reason: "none enabled" });
      expect(r.checks.some((c) => c.verdict === "fail")).toBe(false);
    } finally {
      idle.dir.remove();
    }
  });

  test("something other than a socket at the socket path fails", async () => {
    const idle = bridgeEnv();
    try {
      mkdirSync(join(idle.dir.path, "run"), { mode: 0o700 });
      writeFileSync(idle.socketPath, "");
      const r = await doctor(idle.configPath);
      expect(r.line("bridge")?.verdict).toBe("fail");
      expect(r.line("bridge")?.reason).toContain("something other than a socket");
    } finally {
      rmSync(idle.socketPath, { force: true });
      idle.dir.remove();
    }
  });
});

describe("doctor and the peer check", () => {
  // Group sharing needs the socket chowned to another group, which only root may do.
  test.if(process.getuid?.() === 0)(
    "a Bridge that refuses this user's gid is a fail line",
    async () => {
      const shared = bridgeEnv();
      const config = writeConfig(shared.dir.path, {
        bridge: {
          enabled: true,
          enable_fake_runtime: true,
          socket_path: shared.socketPath,
          state_dir: shared.stateDir,
          lock_dir: shared.lockDir,
          allowed_peer_gid: 54_321,
        },
        workdirs: [{ slot: 1, alias: "repo", path: shared.workspace, read_only: false, agent_mode: "workspace-write", agent_runtimes: ["fake"] }],
      });
      const other = await startBridgeProcess({ ...shared, configPath: config });
      try {
        const r = await doctor(config);
        expect(r.code).toBe(1);
        expect(r.line("bridge")?.verdict).toBe("fail");
        expect(r.line("bridge")?.reason).toContain("refuses this user");
        // with sharing on, the lock and socket directories carry the sharing mode
        expect(r.line("lock_dir")?.reason).toContain("mode 0750");
      } finally {
        await other.stop();
        shared.dir.remove();
      }
    },
    30_000,
  );
});
