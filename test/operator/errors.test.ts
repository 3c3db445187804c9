/**
 * Errors that name the thing and the fix (docs/cli.md, docs/configuration.md): what an operator sees
 * on stderr for a config file that cannot be read or parsed, and for a state directory the Bridge
 * cannot make private — through the real CLI, printed once, never a raw OS message.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../helpers/process.ts";
import { tempDir, writeConfig } from "../helpers/workspace.ts";

const dir = tempDir("sfs-err-");
afterAll(() => dir.remove());

/** One line for a person on stderr (beside the MCP role's JSON log line), exit 2, for each command. */
async function configError(file: string, doctorFails = true): Promise<string> {
  // a command that hangs (on a FIFO, say) is killed, so its test fails instead of waiting for ever
  const results = await Promise.all(["doctor", "bridge", "mcp"].map((cmd) => runCli([cmd, "--config", file], { killAfterMs: 30_000 })));
  const [doctor, ...starting] = results;
  for (const r of starting) {
    expect(r.code).toBe(2);
    expect(r.stderr.split("\n").filter((l) => l !== "" && !l.startsWith("{"))).toHaveLength(1);
  }
  const personal = (s: string) =>
    s
      .split("\n")
      .filter((l) => !l.startsWith("{"))
      .join("\n");
  expect(personal(starting[0]!.stderr)).toBe(personal(starting[1]!.stderr));
  const message = personal(starting[0]!.stderr)
    .replace(/^serverfs: configuration error: /, "")
    .trimEnd();
  // doctor reports the same reason as its failed config check (it checks workdir paths on its own)
  expect(doctor!.code).toBe(1);
  if (doctorFails) expect(doctor!.stdout).toContain(message);
  return message;
}

describe("the config file", () => {
  test("a missing file: which file, and why", async () => {
    const missing = join(dir.path, "nope.toml");
    expect(await configError(missing)).toBe(`the config file ${missing} cannot be read (no such file or directory)`);
  });

  test("a directory in its place: which file, and why", async () => {
    const d = dir.dir("a-dir.toml");
    expect(await configError(d)).toBe(`the config file ${d} cannot be read (it is a directory)`);
  });

  test("a FIFO in its place: refused without a read that would wait for a writer", async () => {
    const fifo = join(dir.path, "fifo.toml");
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
    expect(await configError(fifo)).toBe(`the config file ${fifo} cannot be read (it is a FIFO)`);
  });

  test("a TOML error: its line and column", async () => {
    const f = dir.file("bad.toml", '[server]\nlog_level = "info"\n\n[bridge]\nenabled = = true\n');
    expect(await configError(f)).toBe(`the config file ${f} is not valid TOML (line 5, column 11): Expected a value but found '='`);
  });

  test("an unquoted string: the line and column of the value", async () => {
    const f = dir.file("unquoted.toml", "[server]\nlog_level = debug\n");
    expect(await configError(f)).toMatch(new RegExp(`^the config file ${f} is not valid TOML \\(line 2, column \\d+\\): `));
  });

  test("an unknown key: the closest known one", async () => {
    const f = dir.file("typo.toml", '[server]\nlog_levl = "debug"\n');
    expect(await configError(f)).toBe("server.log_levl: unknown key (did you mean log_level?)");
  });

  test("a workdir that does not exist: its value", async () => {
    const gone = join(dir.path, "gone");
    const f = writeConfig(dir.path, { workdirs: [{ slot: 1, alias: "gone", path: gone }] }, "gone.toml");
    expect(await configError(f, false)).toBe(`workdirs[0].path: ${gone} does not exist`);
  });
});

describe("the state directory", () => {
  /** `serverfs bridge` on `state`, with its socket and locks beside the config `NAME.toml`; it must exit 1. */
  const bridgeRefused = async (state: string, name: string) => {
    const bridge = { enabled: true, state_dir: state, socket_path: join(dir.path, `${name}.sock`), lock_dir: join(dir.path, `${name}-locks`) };
    const r = await runCli(["bridge", "--config", writeConfig(dir.path, { bridge }, `${name}.toml`)]);
    expect(r.code).toBe(1);
    return r;
  };

  test("on a read-only mount: the directory, the reason and the fix, never a raw EROFS", async () => {
    const mnt = dir.dir("ro");
    const mounted = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", mnt]);
    if (mounted.exitCode !== 0) {
      console.warn("SKIP: mount refused here; the read-only state directory case is not exercised");
      return;
    }
    try {
      const state = join(mnt, "state");
      mkdirSync(state, { mode: 0o755 });
      expect(Bun.spawnSync(["mount", "-o", "remount,ro", mnt]).exitCode).toBe(0);
      const r = await bridgeRefused(state, "ro");
      expect(r.stderr).toBe(
        `serverfs: STATE_DIR_UNSAFE: bridge.state_dir ${state}: the directory cannot be made private (mode 0700): read-only file system; it must be on a writable file system you own\n`,
      );
      expect(r.stderr).not.toContain("EROFS");
    } finally {
      Bun.spawnSync(["umount", mnt]);
    }
  });

  test("owned by another user: who owns it and what to do", async () => {
    const state = dir.dir("foreign-state");
    writeFileSync(join(state, "x"), "");
    Bun.spawnSync(["chown", "65534", state]);
    const r = await bridgeRefused(state, "foreign");
    expect(r.stderr).toMatch(
      /^serverfs: STATE_DIR_UNSAFE: bridge\.state_dir .*foreign-state: the directory is owned by uid 65534, not by this user \(uid \d+\); chown it or choose another directory\n$/,
    );
  });
});
