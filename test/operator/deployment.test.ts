/**
 * docs/deployment.md, followed step by step on a fresh temporary HOME: every `sh` block of the page runs
 * in order, as written, through bash. Two things cannot run here and are replaced, openly: `npm ci`
 * (the test run has installed the checkout already) and `systemctl` (no systemd as init): `daemon-reload`
 * becomes `systemd-analyze --user verify` of the installed unit, `enable --now` / `disable --now` start
 * and stop the unit's own `ExecStart` command. Between the steps the test checks what the page promises.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { poll } from "../helpers/poll.ts";
import { REPO_ROOT, type TempDir, tempDir } from "../helpers/workspace.ts";

const page = readFileSync(join(REPO_ROOT, "docs", "deployment.md"), "utf8");
/** The page connects Claude Code: its CLI comes from the provider tier's install (as in .ci/run). */
const CLAUDE = existsSync(join(REPO_ROOT, "node_modules", ".bin", "claude"));
const ANALYZE = Bun.which("systemd-analyze") !== null;
const READY = CLAUDE && ANALYZE;
if (!READY && process.env["CI"] === "true") {
  test("the deployment page's tools are installed (claude from npm, systemd-analyze from Debian's systemd)", () => {
    expect({ claude: CLAUDE, systemdAnalyze: ANALYZE }).toEqual({ claude: true, systemdAnalyze: true });
  });
} else if (!READY) {
  console.warn(`\n!!! SKIPPING test/operator/deployment.test.ts: needs the claude CLI (${CLAUDE}) and systemd-analyze (${ANALYZE})\n`);
}
/** The page's `sh` blocks, in order, each as its lines. */
const blocks = [...page.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!.trim().split("\n"));

let home: TempDir;
let env: Record<string, string>;
let bridge: ReturnType<typeof Bun.spawn> | null = null;
const unitPath = () => join(home.path, ".config", "systemd", "user", "serverfs-bridge.service");
const configPath = () => join(home.path, ".config", "serverfs", "serverfs.toml");

beforeAll(() => {
  home = tempDir("sfs-home-");
  mkdirSync(join(home.path, "src", "myproject"), { recursive: true });
  writeFileSync(join(home.path, "src", "myproject", "README.md"), "# my project\n");
  mkdirSync(join(home.path, "run"), { mode: 0o700 });
  const keep = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(XDG_|CODEX_HOME|CLAUDE_|SERVERFS_)/.test(k))) as Record<string, string>;
  env = {
    ...keep,
    HOME: home.path,
    XDG_RUNTIME_DIR: join(home.path, "run"),
    PATH: [join(home.path, ".local", "bin"), join(REPO_ROOT, "node_modules", ".bin"), "/usr/local/bin", "/usr/bin", "/bin"].join(":"),
  };
});

afterAll(async () => {
  if (bridge && bridge.exitCode === null) {
    bridge.kill("SIGTERM");
    await bridge.exited;
  }
  home?.remove();
});

async function systemctl(line: string): Promise<void> {
  if (line === "systemctl --user daemon-reload") {
    const verify = Bun.spawnSync(["systemd-analyze", "--user", "verify", unitPath()], { env, stdout: "pipe", stderr: "pipe" });
    expect(verify.stderr.toString()).toBe("");
    expect(verify.exitCode).toBe(0);
    return;
  }
  if (line === "systemctl --user enable --now serverfs-bridge") {
    const exec = /^ExecStart=(.*)$/m.exec(readFileSync(unitPath(), "utf8"))![1]!.split(" ");
    bridge = Bun.spawn(exec, { env, stdin: "ignore", stdout: "ignore", stderr: "pipe" });
    const socket = join(home.path, "run", "serverfs-agent-bridge", "bridge.sock");
    await poll(() => existsSync(socket) || bridge!.exitCode !== null, 20_000, "the Bridge's socket");
    expect(bridge.exitCode).toBeNull();
    return;
  }
  if (line === "systemctl --user disable --now serverfs-bridge") {
    bridge?.kill("SIGTERM");
    expect(await bridge?.exited).toBe(0);
    return;
  }
  throw new Error(`the page has a systemctl line this test cannot follow: ${line}`);
}

/** Runs one block of the page; answers what its last command printed. */
async function step(index: number): Promise<{ stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  for (const raw of blocks[index]!) {
    const line = raw.replace(/^npm ci && /, "");
    if (line.startsWith("systemctl ")) {
      await systemctl(line);
      continue;
    }
    const proc = Bun.spawn(["bash", "-euo", "pipefail", "-c", line], { cwd: REPO_ROOT, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
    const code = await proc.exited;
    if (code !== 0) throw new Error(`\`${line}\` exited ${code}:\n${stdout}\n${stderr}`);
  }
  return { stdout, stderr };
}

describe.skipIf(!READY)("docs/deployment.md on a fresh HOME", () => {
  test("the page has the steps this test follows", () => {
    expect(blocks.map((b) => b[0])).toEqual([
      "npm ci && npm run install-local",
      "serverfs init ~/src/myproject",
      "serverfs connect claude-code --write",
      "claude mcp get serverfs",
      "systemctl --user daemon-reload",
      "serverfs backup ~/serverfs-state.sqlite3",
      "systemctl --user disable --now serverfs-bridge",
    ]);
  });

  test("1. install: the binary on PATH and the Bridge's unit", async () => {
    await step(0);
    const bin = join(home.path, ".local", "bin", "serverfs");
    expect(statSync(bin).mode & 0o777).toBe(0o755);
    expect(Bun.spawnSync([bin, "--version"]).stdout.toString()).toMatch(/^serverfs \d+\.\d+\.\d+\n$/);
    expect(readFileSync(unitPath(), "utf8")).toContain(`ExecStart=${bin} bridge --config ${configPath()}`);
  }, 60_000);

  test("2. configure: a private starter config with the project, checked", async () => {
    const { stdout } = await step(1);
    expect(stdout).toContain(`wrote ${configPath()}`);
    expect(stdout).toContain("0 failed");
    expect(statSync(configPath()).mode & 0o777).toBe(0o600);
    expect(readFileSync(configPath(), "utf8")).toContain(`path = "${join(home.path, "src", "myproject")}"`);
  }, 30_000);

  test("3. connect: Claude Code starts serverfs mcp and it can read the project", async () => {
    await step(2);
    const { stdout } = await step(3);
    expect(stdout).toContain("Status: ✔ Connected");
    // the very command Claude Code was given, driven by an MCP client
    const entry = JSON.parse(readFileSync(join(home.path, ".claude.json"), "utf8")).mcpServers.serverfs;
    const client = new Client({ name: "deployment-test", version: "1.0.0" });
    await client.connect(new StdioClientTransport({ command: entry.command, args: entry.args, env, stderr: "ignore" }));
    try {
      const read = await client.callTool({ name: "read_text_file", arguments: { workdir: "myproject", path: "README.md" } });
      expect(read.isError).toBeFalsy();
      expect((read.structuredContent as { content: string }).content).toBe("# my project\n");
    } finally {
      await client.close();
    }
  }, 60_000);

  test("4. the Bridge: the unit verifies, its ExecStart serves, doctor passes", async () => {
    // the page's prose: set [bridge] enabled = true
    writeFileSync(configPath(), readFileSync(configPath(), "utf8").replace("[bridge]\nenabled = false", "[bridge]\nenabled = true"));
    const { stdout } = await step(4);
    expect(stdout).toMatch(/^ok +bridge /m);
    expect(stdout).toContain("0 failed");
  }, 60_000);

  test("backups: a private, consistent copy while the Bridge runs", async () => {
    const { stdout } = await step(5);
    expect(stdout).toMatch(/^backed up \d+ tasks/);
    expect(statSync(join(home.path, "serverfs-state.sqlite3")).mode & 0o777).toBe(0o600);
  }, 30_000);

  test("uninstall: the Bridge stopped, the host entry, the binary and the unit gone", async () => {
    await step(6);
    expect(bridge?.exitCode).toBe(0);
    expect(existsSync(join(home.path, ".local", "bin", "serverfs"))).toBe(false);
    expect(existsSync(unitPath())).toBe(false);
    expect(JSON.parse(readFileSync(join(home.path, ".claude.json"), "utf8")).mcpServers?.serverfs).toBeUndefined();
  }, 30_000);
});
