/**
 * `[audit] file` (docs/configuration.md, docs/mcp-tools.md#audit-log): real `serverfs mcp` processes,
 * two at once, driven by MCP clients, append their audit lines to one file, 0600, rotated at
 * `max_bytes`, no line lost or torn; an unsafe path is refused at startup; the Bridge writes there too.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bridgeEnv, startBridgeProcess } from "../helpers/bridge.ts";
import { type McpSession, startStdio } from "../helpers/mcp-client.ts";
import { poll } from "../helpers/poll.ts";
import { runCli } from "../helpers/process.ts";
import { tempDir, writeConfig } from "../helpers/workspace.ts";

const dir = tempDir("sfs-audit-");
afterAll(() => dir.remove());
dir.file("ws/a.txt", "hello\n");

/** A config whose audit file is `file` (in a 0700 directory unless the test makes another). */
function configFor(name: string, file: string, audit: Record<string, number> = {}): string {
  return writeConfig(dir.path, { audit: { file, ...audit }, workdirs: [{ slot: 1, alias: "repo", path: join(dir.path, "ws") }] }, name);
}

function privateDir(name: string): string {
  const d = join(dir.path, name);
  mkdirSync(d, { mode: 0o700 });
  return d;
}

/** Every line of the file and its rotated copies, oldest first. */
function allLines(file: string, keep: number): string[] {
  const names = [...Array.from({ length: keep }, (_, i) => `${file}.${keep - i}`), file].filter((f) => existsSync(f));
  return names.flatMap((f) => readFileSync(f, "utf8").split("\n").slice(0, -1));
}

describe("serverfs mcp with [audit] file", () => {
  test("two servers at once append every tool_call line, whole, to one 0600 file rotated at max_bytes", async () => {
    const logs = privateDir("logs");
    const file = join(logs, "audit.jsonl");
    const MAX = 4096;
    const KEEP = 50;
    const config = configFor("two.toml", file, { max_bytes: MAX, keep: KEEP });
    const CALLS = 40;
    const sessions: McpSession[] = await Promise.all([startStdio(config), startStdio(config)]);
    try {
      // both clients call at the same time, each marking its calls, so a torn or lost line shows
      await Promise.all(
        sessions.map(async (s, who) => {
          for (let i = 0; i < CALLS; i++)
            expect((await s.call("list_directory", { workdir: "repo", path: ".", limit: 1 + ((who * CALLS + i) % 7) })).isError).toBeFalsy();
        }),
      );
      const toolCalls = () => allLines(file, KEEP).filter((l) => l.includes('"event":"tool_call"'));
      await poll(() => toolCalls().length >= 2 * CALLS, 20_000, "every tool_call line in the audit file");
    } finally {
      await Promise.all(sessions.map((s) => s.close()));
    }
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const lines = allLines(file, KEEP);
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    // no line lost: each server's 40 calls, by the limit each asked for, every one there once
    const calls = records.filter((r) => r["event"] === "tool_call");
    expect(calls).toHaveLength(2 * CALLS);
    expect(records.filter((r) => r["event"] === "startup")).toHaveLength(2);
    // the file rotated at the bound: several old files, each 0600, none past max_bytes
    const rotated = readdirSync(logs).filter((n) => /^audit\.jsonl\.\d+$/.test(n));
    expect(rotated.length).toBeGreaterThan(1);
    for (const n of [...rotated, "audit.jsonl"]) {
      const st = statSync(join(logs, n));
      expect(st.size).toBeLessThanOrEqual(MAX);
      expect(st.mode & 0o777).toBe(0o600);
    }
    // stderr still carries the same lines
    expect(sessions[0]!.audit().filter((r) => r["event"] === "tool_call")).toHaveLength(CALLS);
  }, 120_000);

  test("keep bounds the old files: the oldest is dropped", async () => {
    const logs = privateDir("keep");
    const file = join(logs, "audit.jsonl");
    const session = await startStdio(configFor("keep.toml", file, { max_bytes: 4096, keep: 2 }));
    try {
      for (let i = 0; i < 60; i++) await session.call("list_workdirs");
      await poll(() => existsSync(`${file}.2`), 20_000, "a second rotated file");
    } finally {
      await session.close();
    }
    expect(readdirSync(logs).sort()).toEqual(["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2", "audit.jsonl.lock"]);
  }, 60_000);

  test("a file removed while serving is created again; a symbolic link put there is never followed: one audit_file_failed on stderr, serving goes on", async () => {
    const logs = privateDir("swap");
    const file = join(logs, "audit.jsonl");
    const session = await startStdio(configFor("swap.toml", file));
    try {
      unlinkSync(file);
      expect((await session.call("list_workdirs")).isError).toBeFalsy();
      await poll(() => existsSync(file) && readFileSync(file, "utf8").includes('"event":"tool_call"'), 10_000, "the recreated audit file");
      expect(statSync(file).mode & 0o777).toBe(0o600);

      const target = dir.file("swap-target.txt", "untouched\n");
      unlinkSync(file);
      symlinkSync(target, file);
      for (let i = 0; i < 3; i++) expect((await session.call("list_workdirs")).isError).toBeFalsy();
      await poll(() => session.audit().filter((r) => r["event"] === "tool_call").length === 4, 10_000, "four tool_call lines on stderr");
      expect(session.audit().filter((r) => r["event"] === "audit_file_failed")).toHaveLength(1);
      expect(readFileSync(target, "utf8")).toBe("untouched\n");
    } finally {
      await session.close();
    }
  }, 60_000);

  test("a symbolic link at the path is refused at startup (exit 2), and its target is not touched", async () => {
    const logs = privateDir("link");
    const target = dir.file("elsewhere.txt", "not an audit file\n");
    symlinkSync(target, join(logs, "audit.jsonl"));
    const r = await runCli(["mcp", "--config", configFor("link.toml", join(logs, "audit.jsonl"))]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`serverfs: configuration error: audit.file: ${join(logs, "audit.jsonl")} is a symbolic link`);
    expect(readFileSync(target, "utf8")).toBe("not an audit file\n");
  });

  test("a directory group or others may write, and a file others may read, are refused", async () => {
    const open = privateDir("open");
    chmodSync(open, 0o777);
    const r = await runCli(["mcp", "--config", configFor("open.toml", join(open, "audit.jsonl"))]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`audit.file: the directory ${open} has mode 0777`);
    expect(existsSync(join(open, "audit.jsonl"))).toBe(false);

    const logs = privateDir("readable");
    writeFileSync(join(logs, "audit.jsonl"), "", { mode: 0o644 });
    chmodSync(join(logs, "audit.jsonl"), 0o644);
    const readable = await runCli(["mcp", "--config", configFor("readable.toml", join(logs, "audit.jsonl"))]);
    expect(readable.code).toBe(2);
    expect(readable.stderr).toContain("has mode 0644, so group or others can reach it; it must be 0600 (chmod 600 it)");
  });
});

describe("serverfs bridge with [audit] file", () => {
  test("the Bridge's lines go to the file too", async () => {
    const logs = privateDir("bridge");
    const file = join(logs, "audit.jsonl");
    const env = bridgeEnv({ config: { audit: { file } } });
    try {
      const bridge = await startBridgeProcess(env);
      expect(await bridge.stop()).toBe(0);
      const events = readFileSync(file, "utf8")
        .split("\n")
        .slice(0, -1)
        .map((l) => (JSON.parse(l) as { event: string }).event);
      expect(events).toContain("bridge_started");
      expect(events).toContain("signal_received");
      expect(events.at(-1)).toBe("shutdown_finished");
      expect(statSync(file).mode & 0o777).toBe(0o600);
    } finally {
      env.dir.remove();
    }
  }, 60_000);
});
