/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, run under Bun) against a
 * real `serverfs mcp --http` on loopback (docs/hosts.md "Conformance"): every generic server scenario
 * must pass without a failed check, and every scenario the suite lists must be either run here or
 * named in docs/hosts.md as not applicable, so a new suite version cannot add one unnoticed. The
 * package comes from MCP_CONFORMANCE_BIN (its dist/index.js) or the checkout's node_modules; without
 * it the file is skipped loudly, except under CI=true, where that is a failure.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { cliMissing } from "../fixtures/agent-stack.ts";
import { spawnCli, waitForAuditEvent } from "../helpers/process.ts";
import { BUN, REPO_ROOT, type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

const SUITE = process.env["MCP_CONFORMANCE_BIN"] || join(REPO_ROOT, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
const PRESENT = existsSync(SUITE);
if (!PRESENT) cliMissing("MCP conformance", SUITE, "npm install --no-save @modelcontextprotocol/conformance@0.1.16");

/** The generic scenarios: they need nothing of the suite's reference server. */
const APPLICABLE = [
  "server-initialize",
  "ping",
  "tools-list",
  "resources-list",
  "server-sse-multiple-streams",
  "server-sse-polling",
  "dns-rebinding-protection",
];

/** The scenarios docs/hosts.md lists as not applicable: the backticked first cell of its table rows. */
function documentedNotApplicable(): string[] {
  const doc = readFileSync(join(REPO_ROOT, "docs", "hosts.md"), "utf8");
  const section = doc.slice(doc.indexOf("## Conformance"));
  return [...section.matchAll(/^\| `([a-z0-9-]+)` \|/gm)].map((m) => m[1]!);
}

async function suite(args: string[], cwd: string): Promise<{ code: number; out: string }> {
  const proc = Bun.spawn([BUN, SUITE, ...args], { cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  // the suite colours its output even without a TTY
  return { code, out: (stdout + stderr).replace(/\x1b\[[0-9;]*m/g, "") };
}

/** A loopback port nobody holds right now (allowed_origins must name it before the server starts). */
function freePort(): number {
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = probe.port!;
  void probe.stop(true);
  return port;
}

describe.skipIf(!PRESENT)("the MCP conformance suite against serverfs mcp --http", () => {
  let dir: TempDir;
  let proc: ReturnType<typeof spawnCli>;
  let url: string;

  beforeAll(async () => {
    dir = tempDir("sfs-conformance-");
    dir.file("ws/README.md", "# conformance\n");
    const port = freePort();
    // the suite's valid request sends Origin http://127.0.0.1:PORT, as a browser page served there would
    const config = writeConfig(dir.path, {
      server: { http: { allowed_origins: [`http://127.0.0.1:${port}`] } },
      workdirs: [{ slot: 1, alias: "repo", path: join(dir.path, "ws") }],
    });
    proc = spawnCli(["mcp", "--config", config, "--http", `127.0.0.1:${port}`]);
    const startup = await waitForAuditEvent(proc.stderr, "startup", 20_000);
    url = `http://${String(startup["listen"])}/mcp`;
  }, 30_000);

  afterAll(async () => {
    proc?.kill("SIGTERM");
    await proc?.exited;
    dir?.remove();
  });

  for (const scenario of APPLICABLE) {
    test(`${scenario} passes with no failed check`, async () => {
      const r = await suite(["server", "--url", url, "--scenario", scenario], dir.path);
      const summary = /Passed: (\d+)\/(\d+), (\d+) failed/.exec(r.out);
      expect({ scenario, code: r.code, failed: summary?.[3], output: r.code === 0 ? "" : r.out.slice(0, 3000) }).toEqual({
        scenario,
        code: 0,
        failed: "0",
        output: "",
      });
    }, 60_000);
  }

  test("every server scenario the suite lists is run here or documented as not applicable", async () => {
    const r = await suite(["list"], dir.path);
    expect(r.code).toBe(0);
    const server = r.out.slice(r.out.indexOf("Server scenarios"), r.out.indexOf("Client scenarios"));
    const listed = [...server.matchAll(/^\s+- ([a-z0-9-]+) \[/gm)].map((m) => m[1]!);
    const notApplicable = documentedNotApplicable();
    expect(listed.length).toBeGreaterThan(20);
    expect(listed.filter((s) => !APPLICABLE.includes(s) && !notApplicable.includes(s))).toEqual([]);
    expect(notApplicable.filter((s) => APPLICABLE.includes(s) || !listed.includes(s))).toEqual([]);
  }, 60_000);
});
