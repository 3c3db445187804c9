import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { runCli, spawnCli, waitForAuditEvent } from "../helpers/process.ts";
import { INIT } from "../helpers/raw-http.ts";
import { SERVERFS, type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

let dir: TempDir;
let config: string;

beforeAll(() => {
  dir = tempDir();
  dir.file("ws/a.txt", "hello\n");
  config = writeConfig(dir.path, { workdirs: [{ slot: 1, alias: "repo", path: `${dir.path}/ws` }] });
});
afterAll(() => dir.remove());

describe("stdio", () => {
  test("stdout carries protocol messages only, and EOF on stdin exits promptly with code 0", async () => {
    const spawnedAt = performance.now();
    const proc = spawnCli(["mcp", "--config", config]);
    proc.stdin.write(`${JSON.stringify(INIT)}\n`);
    proc.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
    proc.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" })}\n`);
    await proc.stdin.flush();
    const reader = proc.stdout.getReader();
    let out = "";
    while ((out.match(/\n/g) ?? []).length < 2) {
      const { value, done } = await reader.read();
      if (done) break;
      out += new TextDecoder().decode(value);
    }
    // promptly: the exit takes less than the start-up did, measured in this run
    const closedAt = performance.now();
    const startupMs = closedAt - spawnedAt;
    proc.stdin.end();
    const code = await proc.exited;
    expect(performance.now() - closedAt).toBeLessThan(startupMs);
    expect(code).toBe(0);
    for (const line of out.trim().split("\n")) expect(JSON.parse(line).jsonrpc).toBe("2.0");
  });

  test("SIGTERM ends the process with code 0", async () => {
    const proc = spawnCli(["mcp", "--config", config]);
    await waitForAuditEvent(proc.stderr, "startup");
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
  });
});

describe("startup", () => {
  test("a configuration error writes startup_failed and the configuration error line, nothing to stdout, exit 2", async () => {
    const bad = writeConfig(dir.path, { bogus: true }, "bad.toml");
    const r = await runCli(["mcp", "--config", bad]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("serverfs: configuration error: bogus: unknown key");
    const failed = r.stderr
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l))
      .find((e) => e.event === "startup_failed");
    expect(failed.level).toBe("ERROR");
    expect(failed.reason).toContain("bogus");
    expect(r.stderr).not.toContain(dir.path);
  });

  test("an unparsable --http value is a usage error (exit 2)", async () => {
    const r = await runCli(["mcp", "--config", config, "--http", "nonsense:port"]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
  });
});

/** Reads `stream` until `until` matches, then stops `proc` and reads what is left: everything it wrote. */
async function outputOf(proc: { kill(signal?: NodeJS.Signals): void; exited: Promise<number> }, stream: ReadableStream<Uint8Array>, until: RegExp) {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let out = "";
  let stopped = false;
  for (;;) {
    if (!stopped && until.test(out)) {
      proc.kill("SIGTERM");
      stopped = true;
    }
    const { value, done } = await reader.read();
    if (done) break;
    out += decoder.decode(value, { stream: true });
  }
  await proc.exited;
  return out;
}

describe("--http on a terminal", () => {
  test("stderr on a terminal gets a readable listening line beside the startup JSON line; a pipe gets JSON lines only", async () => {
    // `script` (util-linux) runs the server on a pseudo-terminal, stderr included
    const command = [...SERVERFS, "mcp", "--config", config, "--http", "127.0.0.1:0"].map((w) => `'${w}'`).join(" ");
    const tty = Bun.spawn(["script", "-qec", command, "/dev/null"], { stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    const out = await outputOf(tty, tty.stdout, /listening on [^\n]*\n/);
    const listen = JSON.parse(out.split(/\r?\n/).find((l) => l.includes('"event":"startup"'))!)["listen"];
    expect(out).toContain(`serverfs mcp: listening on http://${listen}/mcp (Ctrl-C stops it)`);

    const piped = spawnCli(["mcp", "--config", config, "--http", "127.0.0.1:0"]);
    const err = await outputOf(piped, piped.stderr, /"event":"startup".*\n/);
    expect(err).not.toContain("listening on");
    for (const line of err.trim().split("\n")) expect(JSON.parse(line).event).toBeString();
  });
});

describe("Streamable HTTP", () => {
  let proc: ReturnType<typeof spawnCli>;
  let port: number;
  let tokenProc: ReturnType<typeof spawnCli>;
  let tokenPort: number;

  beforeAll(async () => {
    proc = spawnCli(["mcp", "--config", config, "--http", "127.0.0.1:0"]);
    port = Number(String((await waitForAuditEvent(proc.stderr, "startup"))["listen"]).split(":")[1]);
    chmodSync(dir.file("token", "s3cret-token\n"), 0o600);
    const tokenConfig = writeConfig(
      dir.path,
      {
        server: { http: { bearer_token_file: `${dir.path}/token`, allowed_origins: ["https://ok.example"] } },
        workdirs: [{ slot: 1, alias: "repo", path: `${dir.path}/ws` }],
      },
      "token.toml",
    );
    tokenProc = spawnCli(["mcp", "--config", tokenConfig, "--http", `:0`]);
    tokenPort = Number(String((await waitForAuditEvent(tokenProc.stderr, "startup"))["listen"]).split(":")[1]);
  });
  afterAll(async () => {
    proc.kill("SIGTERM");
    tokenProc.kill("SIGTERM");
    await Promise.all([proc.exited, tokenProc.exited]);
  });

  const post = (p: number, headers: Record<string, string>, path = "/mcp") =>
    fetch(`http://127.0.0.1:${p}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      body: JSON.stringify(INIT),
    });

  test("a Host outside the allowlist gets 421 and the body echoes nothing", async () => {
    const r = await post(port, { host: "evil.example:80" });
    expect(r.status).toBe(421);
    expect(await r.text()).not.toContain("evil");
  });

  test("the default allowlist accepts 127.0.0.1:PORT and localhost:PORT", async () => {
    expect((await post(port, { host: `localhost:${port}` })).status).toBe(200);
    expect((await post(port, {})).status).toBe(200);
  });

  test("a foreign Origin gets 403; no Origin is accepted", async () => {
    expect((await post(port, { origin: "https://evil.example" })).status).toBe(403);
  });

  test("GET /mcp is 405 and any other path 404", async () => {
    expect((await fetch(`http://127.0.0.1:${port}/mcp`)).status).toBe(405);
    expect((await post(port, {}, "/other")).status).toBe(404);
  });

  test("with a bearer token file, a missing or wrong token gets 401 with WWW-Authenticate: Bearer", async () => {
    const none = await post(tokenPort, {});
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBe("Bearer");
    expect((await post(tokenPort, { authorization: "Bearer wrong" })).status).toBe(401);
    expect((await post(tokenPort, { authorization: "Bearer s3cret-token", origin: "https://ok.example" })).status).toBe(200);
  });

  test("the SDK client runs a whole session over HTTP", async () => {
    const client = new Client({ name: "t", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toContain("list_workdirs");
    const r = await client.callTool({ name: "list_workdirs", arguments: {} });
    expect((r.structuredContent as { workdirs: { alias: string }[] }).workdirs[0]!.alias).toBe("repo");
    await client.close();
  });
});
