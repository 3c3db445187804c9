/**
 * `serverfs init` and `serverfs connect` (docs/hosts.md): a starter config from directory names, the
 * directories with their modes, the checks, and each host's setup with real paths — the printed setup is
 * then used as a host would use it. Real CLI, temporary HOME.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { poll } from "../helpers/poll.ts";
import { runCli } from "../helpers/process.ts";
import { type TempDir, tempDir } from "../helpers/workspace.ts";

const homes: TempDir[] = [];
afterEach(() => {
  for (const h of homes.splice(0)) h.remove();
});

function freshHome() {
  const home = tempDir("sfs-init-");
  homes.push(home);
  const env = { HOME: home.path, XDG_CONFIG_HOME: "", XDG_RUNTIME_DIR: "", CODEX_HOME: join(home.path, ".codex") };
  const config = join(home.path, ".config", "serverfs", "serverfs.toml");
  // a CLI that hangs (on a FIFO, say) is killed, so its test fails instead of waiting for ever
  return { home, env, config, cli: (...args: string[]) => runCli(args, { env, killAfterMs: 30_000 }) };
}

/** The workdir tables of a config file, as loaded by TOML. */
const workdirsOf = (file: string) => (Bun.TOML.parse(readFileSync(file, "utf8")) as { workdirs: Record<string, unknown>[] }).workdirs;

describe("serverfs init", () => {
  test("writes a private, commented starter config; aliases from the names; read-only unless --write", async () => {
    const h = freshHome();
    const a = h.home.dir("src/My Project.v2");
    const b = h.home.dir("other/my-project-v2");
    const c = h.home.dir("src/2024");
    const r = await h.cli("init", a, b, c);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toStartWith(`wrote ${h.config}\n`);
    expect(statSync(h.config).mode & 0o777).toBe(0o600);
    expect(statSync(join(h.home.path, ".config", "serverfs")).mode & 0o777).toBe(0o700);
    expect(workdirsOf(h.config)).toEqual([
      { slot: 1, alias: "my-project-v2", path: a, read_only: true },
      { slot: 2, alias: "my-project-v2-2", path: b, read_only: true },
      { slot: 3, alias: "w-2024", path: c, read_only: true },
    ]);
    expect(readFileSync(h.config, "utf8")).toContain("# Agent tasks (Codex, Claude Code) go through the Bridge");
    // the directories the Bridge and the MCP server use, with their modes
    expect(statSync(join(h.home.path, ".local", "state", "serverfs-agent-bridge")).mode & 0o777).toBe(0o700);
    expect(statSync(join(h.home.path, ".local", "share", "serverfs-agent-bridge", "runtime", "locks")).mode & 0o777).toBe(0o700);
    // the doctor checks ran on it
    expect(r.stdout).toMatch(/^ok +config +loaded /m);
    expect(r.stdout).toContain("0 failed");
  });

  test("no DIR means the current directory; --write makes it writable", async () => {
    const h = freshHome();
    const proj = h.home.dir("proj");
    const proc = Bun.spawn([process.execPath, join(import.meta.dir, "..", "..", "src", "main", "cli.ts"), "init", "--write"], {
      cwd: proj,
      env: { ...process.env, ...h.env },
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(await proc.exited).toBe(0);
    expect(workdirsOf(h.config)).toEqual([{ slot: 1, alias: "proj", path: proj, read_only: false }]);
  });

  test("never overwrites a config without --force", async () => {
    const h = freshHome();
    const proj = h.home.dir("proj");
    mkdirSync(join(h.home.path, ".config", "serverfs"), { recursive: true });
    writeFileSync(h.config, "# mine\n");
    const r = await h.cli("init", proj);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`serverfs: PATH_ALREADY_EXISTS: ${h.config} already exists; run with --force to replace it, or edit it\n`);
    expect(readFileSync(h.config, "utf8")).toBe("# mine\n");
    expect((await h.cli("init", proj, "--force")).code).toBe(0);
    expect(workdirsOf(h.config)[0]!["alias"]).toBe("proj");
  });

  test("a DIR that is not a directory is a usage error", async () => {
    const h = freshHome();
    const r = await h.cli("init", join(h.home.path, "nope"));
    expect(r.code).toBe(2);
    expect(r.stderr).toStartWith(`serverfs: usage error: ${join(h.home.path, "nope")} does not exist`);
  });

  test("prints each host's setup with real paths, and the printed setup works as a host uses it", async () => {
    const h = freshHome();
    const proj = h.home.dir("proj");
    writeFileSync(join(proj, "hello.txt"), "hello\n");
    const r = await h.cli("init", proj);
    expect(r.stdout).toContain(`claude mcp add --scope user serverfs -- `);
    expect(r.stdout).toContain(`mcp --config ${h.config}`);
    expect(r.stdout).toContain("--allowedTools mcp__serverfs");
    expect(r.stdout).toContain(`Codex — add to ${join(h.home.path, ".codex", "config.toml")}`);
    // Claude Desktop's JSON block, parsed and launched as Claude Desktop would
    const json = r.stdout.slice(r.stdout.indexOf("{", r.stdout.indexOf("Claude Desktop")), r.stdout.indexOf("\n\nAudit: "));
    const server = JSON.parse(json).mcpServers.serverfs as { command: string; args: string[] };
    expect(server.args.at(-1)).toBe(h.config);
    const client = new Client({ name: "init-test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({ command: server.command, args: server.args, env: { ...process.env, ...h.env } as Record<string, string>, stderr: "ignore" }),
    );
    try {
      const read = await client.callTool({ name: "read_text_file", arguments: { workdir: "proj", path: "hello.txt" } });
      expect((read.structuredContent as { content: string }).content).toBe("hello\n");
    } finally {
      await client.close();
    }
    expect(r.stdout).toEndWith(
      `\n\nAudit: each host keeps the server's audit lines (its stderr) its own way; for one file that outlives them, set [audit] file in ${h.config} (docs/hosts.md#where-the-audit-lines-go).\n`,
    );
  }, 30_000);

  test("the starter config's [audit] file line, uncommented, gives a 0600 audit file with the server's lines", async () => {
    const h = freshHome();
    await h.cli("init", h.home.dir("proj"));
    writeFileSync(
      h.config,
      readFileSync(h.config, "utf8").replace('# file = "~/.local/state/serverfs/audit.jsonl"', 'file = "~/.local/state/serverfs/audit.jsonl"'),
    );
    const r = await h.cli("doctor");
    expect(r.code).toBe(0);
    const client = new Client({ name: "init-test", version: "1.0.0" });
    const { command, args } = JSON.parse((await h.cli("connect", "claude-desktop")).stdout.split("\nAudit:")[0]!.replace(/^[^{]*/, "")).mcpServers.serverfs;
    await client.connect(new StdioClientTransport({ command, args, env: { ...process.env, ...h.env } as Record<string, string>, stderr: "ignore" }));
    try {
      await client.callTool({ name: "list_workdirs", arguments: {} });
    } finally {
      await client.close();
    }
    const file = join(h.home.path, ".local", "state", "serverfs", "audit.jsonl");
    await poll(() => existsSync(file) && readFileSync(file, "utf8").includes('"event":"tool_call"'), 10_000, "the tool_call line in the audit file");
    expect(statSync(file).mode & 0o777).toBe(0o600);
  }, 30_000);
});

describe("serverfs connect", () => {
  test("codex --write adds the server table and keeps the rest of config.toml byte for byte", async () => {
    const h = freshHome();
    await h.cli("init", h.home.dir("proj"));
    const codexConfig = join(h.env.CODEX_HOME, "config.toml");
    mkdirSync(h.env.CODEX_HOME, { recursive: true });
    const before = 'model = "gpt-5"\n\n[mcp_servers.other]\ncommand = "other"\n';
    writeFileSync(codexConfig, before);
    const r = await h.cli("connect", "codex", "--write", "--auto-approve");
    expect(r.stderr).toBe("");
    // no [audit] file yet: connect says where one goes
    expect(r.stdout).toBe(
      `added [mcp_servers.serverfs] to ${codexConfig}\nAudit: each host keeps the server's audit lines (its stderr) its own way; for one file that outlives them, set [audit] file in ${h.config} (docs/hosts.md#where-the-audit-lines-go).\n`,
    );
    const after = readFileSync(codexConfig, "utf8");
    expect(after.startsWith(before)).toBe(true);
    const parsed = Bun.TOML.parse(after) as { mcp_servers: Record<string, { command: string; args: string[]; default_tools_approval_mode?: string }> };
    expect(parsed.mcp_servers["other"]!.command).toBe("other");
    expect(parsed.mcp_servers["serverfs"]!.args.slice(-3)).toEqual(["mcp", "--config", h.config]);
    expect(parsed.mcp_servers["serverfs"]!.default_tools_approval_mode).toBe("approve");
    // a second run leaves it alone
    const again = await h.cli("connect", "codex", "--write");
    expect(again.stdout).toContain("already has [mcp_servers.serverfs]");
    expect(readFileSync(codexConfig, "utf8")).toBe(after);
  });

  test("codex --write --auto-approve on a table without the approval line says exactly what to add, exit 1, and changes nothing", async () => {
    const h = freshHome();
    await h.cli("init", h.home.dir("proj"));
    const codexConfig = join(h.env.CODEX_HOME, "config.toml");
    expect((await h.cli("connect", "codex", "--write")).code).toBe(0);
    const before = readFileSync(codexConfig, "utf8");
    const r = await h.cli("connect", "codex", "--write", "--auto-approve");
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `serverfs: PATH_ALREADY_EXISTS: ${codexConfig} already has [mcp_servers.serverfs] without default_tools_approval_mode = "approve"; add that line to the table yourself (or remove the table and run this again)\n`,
    );
    expect(readFileSync(codexConfig, "utf8")).toBe(before);
    // once the line is there, asking again is a no-op that succeeds
    writeFileSync(codexConfig, before.replace('# default_tools_approval_mode = "approve"', 'default_tools_approval_mode = "approve"'));
    const done = await h.cli("connect", "codex", "--write", "--auto-approve");
    expect(done.code).toBe(0);
    expect(done.stdout).toContain("already has [mcp_servers.serverfs]");
  });

  test("codex --write escapes a config path's control characters, quotes and backslashes, so a strict TOML reader takes it back exactly", async () => {
    const h = freshHome();
    // DEL, C0 controls, a tab, a quote, a backslash and a C1 control (NEL) in one directory name
    const config = join(h.home.dir('odd\u007fname\u0001\u001b\t"q\\b\u0085'), "serverfs.toml");
    expect((await h.cli("init", h.home.dir("proj"), "--config", config)).code).toBe(0);
    const r = await h.cli("connect", "codex", "--write", "--config", config);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const written = readFileSync(join(h.env.CODEX_HOME, "config.toml"), "utf8");
    // no raw control character but the newlines between lines
    expect(written.replace(/\n/g, "")).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    const parsed = Bun.TOML.parse(written) as { mcp_servers: Record<string, { args: string[] }> };
    expect(parsed.mcp_servers["serverfs"]!.args.slice(-2)).toEqual(["--config", config]);
  });

  test("codex --write refuses a config.toml that is a FIFO, a directory or a socket, without opening it: exit 1, NOT_A_FILE", async () => {
    const h = freshHome();
    await h.cli("init", h.home.dir("proj"));
    const codexConfig = join(h.env.CODEX_HOME, "config.toml");
    mkdirSync(h.env.CODEX_HOME, { recursive: true });
    expect(Bun.spawnSync(["mkfifo", codexConfig]).exitCode).toBe(0);
    // a read of the FIFO would block until a writer came: none ever does
    const r = await h.cli("connect", "codex", "--write");
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(`serverfs: NOT_A_FILE: ${codexConfig} is a FIFO, not a regular file; make it one, or point CODEX_HOME elsewhere\n`);
    expect(statSync(codexConfig).isFIFO()).toBe(true);
    rmSync(codexConfig);
    mkdirSync(codexConfig);
    expect((await h.cli("connect", "codex", "--write")).stderr).toContain(`${codexConfig} is a directory, not a regular file`);
    rmSync(codexConfig, { recursive: true });
    const socket = Bun.listen({ unix: codexConfig, socket: { data() {} } });
    try {
      expect((await h.cli("connect", "codex", "--write")).stderr).toContain(`${codexConfig} is a socket, not a regular file`);
    } finally {
      socket.stop(true);
    }
  });

  test("without --write it prints; Claude Desktop is print-only; an unknown host is a usage error", async () => {
    const h = freshHome();
    await h.cli("init", h.home.dir("proj"));
    const printed = await h.cli("connect", "claude-desktop");
    expect(printed.code).toBe(0);
    expect(printed.stdout).toContain('"mcpServers"');
    const write = await h.cli("connect", "claude-desktop", "--write");
    expect(write.code).toBe(1);
    expect(write.stderr).toStartWith("serverfs: INVALID_ARGUMENT: Claude Desktop has no Linux build");
    const unknown = await h.cli("connect", "claude-cod");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toStartWith("serverfs: usage error: unknown host claude-cod (did you mean claude-code?)");
  });
});
