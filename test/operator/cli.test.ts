/**
 * The command line as a person meets it (docs/cli.md): help and version touch nothing and exit 0; a
 * mistake in the command line exits 2 with the command's usage and, where one is close, a suggestion.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { VERSION } from "../../src/shared/version.ts";
import { bridgeEnv } from "../helpers/bridge.ts";
import { runCli } from "../helpers/process.ts";

const env = bridgeEnv();
afterAll(() => env.dir.remove());

describe("help and version have no side effects", () => {
  for (const argv of [["--help"], ["-h"], ["help"]]) {
    test(`serverfs ${argv.join(" ")} prints every command and exits 0`, async () => {
      const r = await runCli(argv);
      expect(r.code).toBe(0);
      for (const c of ["mcp", "bridge", "demo", "doctor", "tasks", "recovery", "version", "help"]) expect(r.stdout).toContain(`  ${c} `);
      expect(r.stderr).toBe("");
    });
  }

  for (const cmd of ["bridge", "mcp", "demo", "doctor", "tasks", "recovery"]) {
    test(`serverfs ${cmd} --help prints its options and an example, and starts nothing`, async () => {
      const r = await runCli(cmd === "demo" ? [cmd, "--help"] : [cmd, "--config", env.configPath, "--help"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toStartWith(`usage: serverfs ${cmd}`);
      expect(r.stdout).toContain(`example: serverfs ${cmd}`);
      expect(r.stdout).toContain("--help");
      // a Bridge would have made its state directory and socket
      expect(existsSync(env.stateDir)).toBe(false);
      expect(existsSync(env.socketPath)).toBe(false);
    });
  }

  test("help COMMAND is the same text as COMMAND --help", async () => {
    const [a, b] = await Promise.all([runCli(["help", "tasks"]), runCli(["tasks", "-h"])]);
    expect(a.code).toBe(0);
    expect(a.stdout).toBe(b.stdout);
    for (const flag of ["--status S", "--limit N", "--after N", "--json", "--config F"]) expect(a.stdout).toContain(flag);
  });

  for (const argv of [["--version"], ["-V"], ["version"]]) {
    test(`serverfs ${argv.join(" ")} prints the version`, async () => {
      const r = await runCli(argv);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(`serverfs ${VERSION}\n`);
    });
  }

  test("version --json gives the build details", async () => {
    const r = await runCli(["version", "--json"]);
    expect(r.code).toBe(0);
    const details = JSON.parse(r.stdout);
    expect(details).toMatchObject({ name: "serverfs", version: VERSION, protocol_version: 1, compiled: false, platform: "linux" });
    expect(details.bun).toBe(Bun.version);
  });
});

describe("mistakes exit 2 and name the fix", () => {
  const cases: [string[], string][] = [
    [["doctr"], "unknown command doctr (did you mean doctor?)"],
    [["help", "taks"], "unknown command taks (did you mean tasks?)"],
    [["doctor", "--confg", "x"], "unknown option --confg (did you mean --config?)"],
    [["mcp", "--htp", "127.0.0.1:1"], "unknown option --htp (did you mean --http?)"],
    [["tasks", "lst"], "unknown tasks command lst (did you mean list?)"],
    [["recovery", "claer"], "unknown recovery command claer (did you mean clear?)"],
    [["bridge", "extra"], "unexpected argument extra"],
    [["demo", "--config", "x"], "unknown option --config"],
    [["tasks", "list", "--json=yes"], "--json takes no value"],
    [["tasks", "list", "--limit"], "--limit needs a value (--limit N)"],
    [["--config", "x"], "--config needs a command before it"],
  ];
  for (const [argv, message] of cases) {
    test(`serverfs ${argv.join(" ")}`, async () => {
      const r = await runCli(argv);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr.split("\n")[0]).toBe(`serverfs: usage error: ${message}`);
      expect(r.stderr).toMatch(/run `serverfs (--help|help \w+)`/);
    });
  }

  test("a command's usage error shows that command's synopsis", async () => {
    const r = await runCli(["doctor", "--confg", "x"]);
    expect(r.stderr).toContain("  serverfs doctor [--config F]\n");
    expect(r.stderr).toContain("run `serverfs help doctor` for every option");
  });

  test("serverfs with no command prints the usage on stderr and exits 2", async () => {
    const r = await runCli([]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toStartWith("usage: serverfs <command>");
  });
});
