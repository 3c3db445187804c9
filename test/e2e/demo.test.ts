/**
 * `serverfs demo` (docs/cli.md): every step against a real Bridge and MCP server; and on any early end —
 * a reader that went away, a signal — it stops its Bridge, removes its temporary directory and says so.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { poll } from "../helpers/poll.ts";
import { runCli, spawnCli } from "../helpers/process.ts";
import { REPO_ROOT, SERVERFS_SHELL, type TempDir, tempDir } from "../helpers/workspace.ts";

/** Live processes whose command line names `needle` (the demo's Bridge and MCP server name its temp dir). */
function processesNaming(needle: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, "utf8").includes(needle)) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

const tmps: TempDir[] = [];
afterEach(() => {
  for (const t of tmps.splice(0)) t.remove();
});

/** The demo with its own TMPDIR, so what it leaves behind (or not) is visible there. */
function demoTmp(): { TMPDIR: string } {
  const tmp = tempDir("sfs-demo-tmp-");
  tmps.push(tmp);
  return { TMPDIR: tmp.path };
}

describe("serverfs demo", () => {
  test("the demo runs every step against a real Bridge and MCP server and exits 0", async () => {
    const env = demoTmp();
    const r = await runCli(["demo"], { env });
    expect(r.stdout).toContain("All 10 steps held");
    expect(r.stdout).not.toContain("FAILED");
    expect(r.code).toBe(0);
    expect(readdirSync(env.TMPDIR)).toEqual([]);
  }, 60_000);

  test("a non-terminal stdout gets no colour escapes", async () => {
    const r = await runCli(["demo"], { env: demoTmp() });
    expect(r.stdout).not.toContain("\x1b[");
  }, 60_000);

  /** The demo on a real terminal: script(1) gives it a pseudo-terminal and copies what it shows. */
  async function onTerminal(env: Record<string, string>): Promise<string> {
    const proc = Bun.spawn(["script", "-qec", `${SERVERFS_SHELL} demo`, "/dev/null"], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...demoTmp(), ...env },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stdout] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    return stdout;
  }

  test("on a terminal the transcript is coloured, unless NO_COLOR is set", async () => {
    const coloured = await onTerminal({});
    expect(coloured).toContain("All 10 steps held");
    expect(coloured).toContain("\x1b[32mok\x1b[0m");
    const plain = await onTerminal({ NO_COLOR: "1" });
    expect(plain).toContain("All 10 steps held");
    expect(plain).not.toContain("\x1b[");
  }, 60_000);

  test("`serverfs demo | head -3` ends cleanly: no stack trace, its Bridge stopped, its temp directory gone", async () => {
    const env = demoTmp();
    const proc = Bun.spawn(["bash", "-c", `${SERVERFS_SHELL} demo | head -3; echo "demo=\${PIPESTATUS[0]}" >&2`], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect(stdout.split("\n").length).toBeLessThanOrEqual(4);
    expect(stderr).toContain("serverfs demo: stopped (its output was closed)");
    expect(stderr).not.toContain("EPIPE");
    expect(stderr).toContain("demo=1");
    expect(readdirSync(env.TMPDIR)).toEqual([]);
    expect(processesNaming(env.TMPDIR)).toEqual([]);
  }, 60_000);

  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    test(`${signal} mid-run stops the Bridge, removes the temp directory and prints one clear line`, async () => {
      const env = demoTmp();
      const proc = spawnCli(["demo"], { env });
      let stdout = "";
      const reader = proc.stdout.getReader();
      // the signal lands once the Bridge and the MCP server both run
      await poll(async () => {
        const { value, done } = await reader.read();
        if (value) stdout += new TextDecoder().decode(value);
        return done || stdout.includes("[2/10]");
      }, 30_000);
      expect(processesNaming(env.TMPDIR).length).toBeGreaterThan(0);
      proc.kill(signal);
      void (async () => {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          stdout += new TextDecoder().decode(value);
        }
      })();
      const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
      expect(code).toBe(signal === "SIGINT" ? 130 : 143);
      expect(stderr).toContain(`serverfs demo: stopped (${signal} received)`);
      expect(stdout).not.toContain("FAILED");
      expect(readdirSync(env.TMPDIR)).toEqual([]);
      expect(processesNaming(env.TMPDIR)).toEqual([]);
    }, 60_000);
  }
});
