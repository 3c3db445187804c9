/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, run under Bun: it needs
 * Node 22's fs.globSync) against a real `serverfs mcp --http` on loopback serving both protocol
 * revisions (docs/hosts.md "Conformance"). Each scenario that applies runs at each revision it is
 * listed for (`--spec-version`), and every check must pass, except the ones named below with the
 * reason (a check needing the suite's own fixture tools, or a suite defect), which must fail exactly
 * so. Every server scenario the suite lists, and every one `--requirements 2026-07-28` names, must be
 * either run here or in docs/hosts.md's "not applicable" table, so a new suite version cannot add one
 * unnoticed. The package comes from MCP_CONFORMANCE_BIN (its dist/index.js) or the checkout's
 * node_modules; without it the file is skipped loudly, except under CI=true, where that is a failure.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { cliMissing } from "../fixtures/agent-stack.ts";
import { spawnCli, waitForAuditEvent } from "../helpers/process.ts";
import { BUN, REPO_ROOT, type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

const SUITE = process.env["MCP_CONFORMANCE_BIN"] || join(REPO_ROOT, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
const PRESENT = existsSync(SUITE);
if (!PRESENT) cliMissing("MCP conformance", SUITE, "npm ci (the devDependency @modelcontextprotocol/conformance)");

const V2025 = "2025-11-25";
const V2026 = "2026-07-28";

/** The scenarios that need nothing of the suite's reference server, by the revisions each is run at. */
const APPLICABLE: Record<string, string[]> = {
  "server-initialize": [V2025],
  "server-session-lifecycle": [V2025],
  ping: [V2025],
  "server-sse-polling": [V2025],
  "server-stateless": [V2026],
  caching: [V2026],
  "http-header-validation": [V2026],
  "sep-2164-resource-not-found": [V2026],
  "tools-list": [V2025, V2026],
  "resources-list": [V2025, V2026],
  "server-sse-multiple-streams": [V2025, V2026],
  "dns-rebinding-protection": [V2025, V2026],
};

/**
 * Checks of applicable scenarios that fail for a reason outside ServerFS (docs/hosts.md), by scenario:
 * each must fail, and nothing else may.
 */
const KNOWN_FAILURES: Record<string, string[]> = {
  // the suite's diagnostic tools test_missing_capability, test_streaming_elicitation, test_logging_tool
  "server-stateless": [
    "sep-2575-server-rejects-undeclared-capability",
    "sep-2575-missing-capability-http-400",
    "sep-2575-http-server-no-independent-requests-on-stream",
    "sep-2575-server-no-log-without-loglevel",
  ],
  // the suite asks prompts/list of a server that declares no prompts: -32601, as it must be
  caching: ["sep-2549-prompts-list-caching-hints"],
};

/** The warnings an applicable scenario reports, by scenario and revision (docs/hosts.md); none elsewhere. */
const KNOWN_WARNINGS: Record<string, string[]> = {
  // no event store: a POST stream has no priming event with an id and no retry field
  [`server-sse-polling@${V2025}`]: ["server-sse-priming-event", "server-sse-retry-field"],
};

interface Check {
  id: string;
  status: "SUCCESS" | "FAILURE" | "WARNING" | "SKIPPED" | "INFO";
  errorMessage?: string;
  details?: { untestable?: boolean };
}

/** The scenarios docs/hosts.md lists as not applicable: the backticked first cell of that table's rows. */
function documentedNotApplicable(): string[] {
  const doc = readFileSync(join(REPO_ROOT, "docs", "hosts.md"), "utf8");
  const section = doc.slice(doc.indexOf("### Not applicable"));
  return [...section.matchAll(/^\| `([a-z0-9-]+)` \|/gm)].map((m) => m[1]!);
}

/** The scenarios docs/hosts.md lists as run, with the revisions of its second cell. */
function documentedRun(): Record<string, string[]> {
  const doc = readFileSync(join(REPO_ROOT, "docs", "hosts.md"), "utf8");
  const section = doc.slice(doc.indexOf("## Conformance"), doc.indexOf("### Not applicable"));
  return Object.fromEntries([...section.matchAll(/^\| `([a-z0-9-]+)` \| ([0-9, -]+) \|/gm)].map((m) => [m[1]!, m[2]!.split(", ")]));
}

async function suite(args: string[], cwd: string): Promise<{ code: number; out: string }> {
  const proc = Bun.spawn([BUN, SUITE, ...args], { cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  // the suite colours its output even without a TTY
  return { code, out: (stdout + stderr).replace(/\x1b\[[0-9;]*m/g, "") };
}

/** The server scenarios of a `list` output. */
function serverScenarios(out: string): string[] {
  const server = out.slice(out.indexOf("Server scenarios"), out.indexOf("Client scenarios"));
  return [...server.matchAll(/^\s+- ([a-z0-9-]+)(?: \[|$)/gm)].map((m) => m[1]!);
}

/** A loopback port nobody holds right now (allowed_origins must name it before the server starts). */
function freePort(): number {
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = probe.port!;
  void probe.stop(true);
  return port;
}

describe.skipIf(!PRESENT)("the MCP conformance suite against serverfs mcp --http serving 2025-11-25 and 2026-07-28", () => {
  let dir: TempDir;
  let proc: ReturnType<typeof spawnCli>;
  let url: string;

  beforeAll(async () => {
    dir = tempDir("sfs-conformance-");
    dir.file("ws/README.md", "# conformance\n");
    const port = freePort();
    // the suite's valid request sends Origin http://127.0.0.1:PORT, as a browser page served there would
    const config = writeConfig(dir.path, {
      server: { protocol_revisions: [V2025, V2026], http: { allowed_origins: [`http://127.0.0.1:${port}`] } },
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

  for (const [scenario, revisions] of Object.entries(APPLICABLE)) {
    for (const revision of revisions) {
      test(`${scenario} at ${revision}: every check passes but the known ones`, async () => {
        const out = join(dir.path, "results", `${scenario}@${revision}`);
        const r = await suite(["server", "--url", url, "--scenario", scenario, "--spec-version", revision, "-o", out], dir.path);
        const [run] = existsSync(out) ? readdirSync(out) : [];
        expect({ scenario, revision, ran: run !== undefined, output: run === undefined ? r.out.slice(0, 3000) : "" }).toEqual({
          scenario,
          revision,
          ran: true,
          output: "",
        });
        const checks = JSON.parse(readFileSync(join(out, run!, "checks.json"), "utf8")) as Check[];
        const failed = checks.filter((c) => c.status === "FAILURE");
        const known = KNOWN_FAILURES[scenario] ?? [];
        // an unexpected failure shows its message
        const seen = failed.map((c) => (known.includes(c.id) ? c.id : `${c.id}: ${c.errorMessage ?? ""}`)).sort();
        expect({ scenario, revision, failed: seen }).toEqual({ scenario, revision, failed: [...known].sort() });
        // a known fixture-bound failure is one the suite itself calls untestable here
        for (const c of failed)
          if (scenario === "server-stateless") expect({ id: c.id, untestable: c.details?.untestable }).toEqual({ id: c.id, untestable: true });
        const warned = checks.filter((c) => c.status === "WARNING").map((c) => c.id);
        expect({ scenario, revision, warned }).toEqual({ scenario, revision, warned: KNOWN_WARNINGS[`${scenario}@${revision}`] ?? [] });
      }, 60_000);
    }
  }

  test("every server scenario the suite lists, and every one 2026-07-28 requires, is run here or documented as not applicable", async () => {
    const all = await suite(["list", "--server"], dir.path);
    const required = await suite(["list", "--requirements", V2026], dir.path);
    expect([all.code, required.code]).toEqual([0, 0]);
    const listed = serverScenarios(all.out);
    const requiredServer = serverScenarios(required.out);
    expect(listed.length).toBeGreaterThan(60);
    expect(requiredServer.length).toBeGreaterThan(30);
    expect(requiredServer.filter((s) => !listed.includes(s))).toEqual([]);
    const run = Object.keys(APPLICABLE);
    const notApplicable = documentedNotApplicable();
    expect(listed.filter((s) => !run.includes(s) && !notApplicable.includes(s))).toEqual([]);
    expect(notApplicable.filter((s) => run.includes(s) || !listed.includes(s))).toEqual([]);
    expect(documentedRun()).toEqual(APPLICABLE);
  }, 60_000);
});
