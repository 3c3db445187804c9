/**
 * Settings mean what they say (docs/configuration.md, docs/cli.md): a disabled Bridge refuses to start,
 * SIGHUP is a clean shutdown, an enabled runtime that cannot run is a warning at Bridge startup, and
 * `doctor` warns about a configuration that offers no workdir. The real CLI, real processes.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { bridgeEnv, startBridgeProcess } from "../helpers/bridge.ts";
import { poll } from "../helpers/poll.ts";
import { runCli } from "../helpers/process.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

describe("serverfs bridge", () => {
  test("[bridge] enabled = false: the Bridge refuses to start (exit 2) and says how to enable it", async () => {
    const dir: TempDir = tempDir("sfs-set-");
    cleanups.push(() => dir.remove());
    const state = join(dir.path, "state");
    const configPath = writeConfig(dir.path, { bridge: { enabled: false, state_dir: state, socket_path: join(dir.path, "b.sock") } });
    const r = await runCli(["bridge", "--config", configPath]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "serverfs: configuration error: bridge.enabled: is false, so the Bridge must not run; set [bridge] enabled = true to use agent tasks\n",
    );
    expect(existsSync(state)).toBe(false);
  });

  test("SIGHUP is a clean shutdown: exit 0 and the socket removed", async () => {
    const env = bridgeEnv();
    cleanups.push(() => env.dir.remove());
    const bridge = await startBridgeProcess(env);
    expect(existsSync(env.socketPath)).toBe(true);
    expect(await bridge.stop("SIGHUP")).toBe(0);
    expect(existsSync(env.socketPath)).toBe(false);
  });

  test("an enabled runtime whose binary is missing is a warning line at startup; the Bridge still serves", async () => {
    const env = bridgeEnv({ config: { runtimes: { codex: { enabled: true, bin: "/nonexistent/codex" } } } });
    cleanups.push(() => env.dir.remove());
    const bridge = await startBridgeProcess(env);
    cleanups.push(() => void bridge.stop());
    const warning = () =>
      bridge
        .stderr()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l))
        .find((e) => e.event === "runtime_unavailable");
    await poll(() => warning() !== undefined, 20_000, "the runtime_unavailable line");
    expect(warning()).toMatchObject({ level: "WARN", runtime: "codex" });
    expect(JSON.stringify(warning())).not.toContain("/nonexistent");
    expect(bridge.proc.exitCode).toBeNull();
  });
});

describe("serverfs doctor", () => {
  test("an empty workdirs list is a warning", async () => {
    const dir = tempDir("sfs-set-");
    cleanups.push(() => dir.remove());
    const r = await runCli(["doctor", "--config", writeConfig(dir.path, {})]);
    expect(r.stdout).toMatch(/^warn +workdirs +none configured/m);
  });
});
