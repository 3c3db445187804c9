import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { linkSync, symlinkSync } from "node:fs";
import { availableParallelism } from "node:os";
import { callAudited, errorCode, type McpSession, startStdio, structured } from "../helpers/mcp-client.ts";
import { startInProcess } from "../helpers/mcp-in-process.ts";
import { BUN, CLI, REPO_ROOT, type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

interface Hit {
  path: string;
  line: number;
  text: string;
  text_truncated: boolean;
}
interface Searched {
  matches: Hit[];
  returned: number;
  truncated: boolean;
}

let dir: TempDir;
let mcp: McpSession;
let slowConfig: string;
let eofConfig: string;

const search = async (args: Record<string, unknown>, workdir = "repo") => structured<Searched>(await mcp.call("search_text", { workdir, limit: 100, ...args }));
const where = (r: Searched) => r.matches.map((m) => `${m.path}:${m.line}`);

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const SLOW_LINKS = 150;

beforeAll(async () => {
  dir = tempDir();
  const ws = `${dir.path}/ws`;
  dir.file("ws/src/a.ts", "const Hello = 1;\nhello world\nnothing\nHELLO\n");
  dir.file("ws/src/b.js", "hello from js\n");
  dir.file("ws/src/deep/c.ts", "deep hello\n");
  dir.file("ws/bom.txt", Buffer.concat([BOM, Buffer.from("hello bom\r\nsecond hello\r\n")]));
  dir.file("ws/bin.dat", Buffer.from("hello\nworld\0\n"));
  dir.file(
    "ws/latin.txt",
    Buffer.concat([Buffer.from("hello ok\n"), Buffer.from([0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x20, 0xe9, 0x0a]), Buffer.from("hello again")]),
  );
  dir.file("ws/multi.txt", "hello hello hello\nhello\n");
  dir.file("ws/long.txt", `hello${"é".repeat(2000)}\nhello short\n`);
  dir.file("ws/fold.txt", "STRASSE\nstraẞe\nKelvin \u212A\n");
  dir.file("ws/.hidden.txt", "hello hidden\n");
  dir.file("ws/.git/config", "hello git\n");
  dir.file("ws/sub/.svn/entries", "hello svn\n");
  dir.file("ws/sub/.hg/store", "hello hg\n");
  dir.file("ws/vendor/v.ts", "hello vendor\n");
  dir.file("ws/keys.pem", "hello pem\n");
  dir.file("ws/private/p.txt", "hello private\n");
  dir.file("ws/big.txt", `${"x".repeat(5000)}\nhello big\n`);
  symlinkSync("src/b.js", `${ws}/link.txt`);
  symlinkSync("src", `${ws}/linkdir`);
  Bun.spawnSync(["mkfifo", `${ws}/pipe.txt`]);

  // A tree any search needs seconds for: one large text file under many hard links (searched
  // case-folded for a query outside ASCII, which is matched in the decoded text).
  const slow = `${dir.path}/slow`;
  dir.file("slow/0.txt", "the quick brown fox jumps over the lazy dog\n".repeat(600_000));
  for (let i = 1; i <= SLOW_LINKS; i++) linkSync(`${slow}/0.txt`, `${slow}/${i}.txt`);

  const workdirs = [
    { slot: 1, alias: "repo", path: ws, extra_deny_globs: ["private/**"] },
    { slot: 2, alias: "hid", path: ws, allow_hidden: true },
    { slot: 3, alias: "slow", path: slow },
  ];
  const config = writeConfig(dir.path, { limits: { search_max_file_bytes: 2048 * 2 + 100 }, workdirs });
  slowConfig = writeConfig(dir.path, { limits: { search_timeout_seconds: 1 }, workdirs }, "slow.toml");
  eofConfig = writeConfig(dir.path, { workdirs }, "eof.toml");
  mcp = await startInProcess(config);
}, 30_000);
afterAll(async () => {
  await mcp?.close();
  dir?.remove();
});

describe("search_text: hits", () => {
  test("a literal query yields one hit per matching line, files in walk order, lines ascending", async () => {
    const r = await search({ query: "hello" });
    expect(where(r)).toEqual([
      "bom.txt:1",
      "bom.txt:2",
      "latin.txt:1",
      "latin.txt:3",
      "long.txt:1",
      "long.txt:2",
      "multi.txt:1",
      "multi.txt:2",
      "src/a.ts:2",
      "src/b.js:1",
      "src/deep/c.ts:1",
      "vendor/v.ts:1",
    ]);
    expect(r).toMatchObject({ returned: 12, truncated: false });
  });
  test("the query is literal: regex metacharacters match themselves", async () => {
    expect((await search({ query: "hel.o" })).returned).toBe(0);
    expect((await search({ query: "Hello = 1;" })).matches[0]).toMatchObject({ path: "src/a.ts", line: 1 });
  });
  test("the BOM is stripped from line 1 and a \\r before the \\n is kept", async () => {
    const r = await search({ query: "bom", path: "" });
    expect(r.matches).toEqual([{ path: "bom.txt", line: 1, text: "hello bom\r", text_truncated: false }]);
  });
  test("a file holding a NUL is binary and yields no hits", async () => {
    expect(where(await search({ query: "hello" }))).not.toContain("bin.dat:1");
    expect((await search({ query: "world", glob: "*.dat" })).returned).toBe(0);
  });
  test("a line that is not valid UTF-8 yields no hit; its neighbours still do", async () => {
    expect(where(await search({ query: "hello", glob: "latin.txt" }))).toEqual(["latin.txt:1", "latin.txt:3"]);
  });
  test("a long line is cut to its longest UTF-8-safe prefix of at most 2,048 bytes", async () => {
    const [first, second] = (await search({ query: "hello", glob: "long.txt" })).matches;
    expect(first!.text_truncated).toBe(true);
    expect(first!.text).toBe(`hello${"é".repeat(1021)}`);
    expect(Buffer.byteLength(first!.text)).toBe(2047);
    expect(second).toMatchObject({ text: "hello short", text_truncated: false });
  });
});

describe("search_text: case", () => {
  test("case_sensitive (the default) compares code points exactly", async () => {
    expect(where(await search({ query: "HELLO" }))).toEqual(["src/a.ts:4"]);
  });
  test("case_sensitive = false uses Unicode simple case folding", async () => {
    expect(where(await search({ query: "HELLO", case_sensitive: false, path: "src" }))).toEqual([
      "src/a.ts:1",
      "src/a.ts:2",
      "src/a.ts:4",
      "src/b.js:1",
      "src/deep/c.ts:1",
    ]);
    expect(where(await search({ query: "STRAßE", case_sensitive: false, glob: "fold.txt" }))).toEqual(["fold.txt:2"]);
    expect(where(await search({ query: "kelvin k", case_sensitive: false, glob: "fold.txt" }))).toEqual(["fold.txt:3"]);
  });
});

describe("search_text: files searched", () => {
  test("symlinks, symlinked directories and FIFOs are skipped (the FIFO without blocking)", async () => {
    const paths = (await search({ query: "hello" })).matches.map((m) => m.path);
    expect(paths.some((p) => p.startsWith("link"))).toBe(false);
    expect(paths).not.toContain("pipe.txt");
  });
  test("hidden, denied and reserved files are never searched; allow_hidden releases hidden ones only", async () => {
    const repo = (await search({ query: "hello" })).matches.map((m) => m.path);
    expect(repo.filter((p) => p.split("/").some((seg) => seg.startsWith(".")))).toEqual([]);
    expect(repo).not.toContain("keys.pem");
    expect(repo).not.toContain("private/p.txt");
    const hid = (await search({ query: "hello" }, "hid")).matches.map((m) => m.path);
    expect(hid).toContain(".hidden.txt");
    expect(hid).toContain("private/p.txt");
    expect(hid).not.toContain("keys.pem");
  });
  test(".git, .hg and .svn are never entered, even with allow_hidden", async () => {
    const hid = (await search({ query: "hello" }, "hid")).matches.map((m) => m.path);
    expect(hid.some((p) => /(^|\/)\.(git|hg|svn)\//.test(p))).toBe(false);
  });
  test("files larger than search_max_file_bytes are skipped", async () => {
    expect((await search({ query: "hello big" })).returned).toBe(0);
  });
  test("path restricts the search to a directory, which must be one", async () => {
    expect(where(await search({ query: "hello", path: "src/deep" }))).toEqual(["src/deep/c.ts:1"]);
    expect(errorCode(await mcp.call("search_text", { workdir: "repo", query: "x", path: "multi.txt" }))).toBe("NOT_A_DIRECTORY");
    expect(errorCode(await mcp.call("search_text", { workdir: "repo", query: "x", path: "linkdir" }))).toBe("SYMLINK_NOT_ALLOWED");
    expect(errorCode(await mcp.call("search_text", { workdir: "repo", query: "x", path: ".git" }))).toBe("HIDDEN_PATH_NOT_ALLOWED");
  });
});

describe("search_text: glob", () => {
  const files = async (glob: string, path = "") => [...new Set((await search({ query: "hello", glob, path })).matches.map((m) => m.path))];
  test("a glob without / matches the basename; directories are still descended", async () => {
    expect(await files("*.ts")).toEqual(["src/a.ts", "src/deep/c.ts", "vendor/v.ts"]);
  });
  test("a glob with / matches the path below the search directory; * stays in a segment, ** spans segments", async () => {
    expect(await files("src/*.ts")).toEqual(["src/a.ts"]);
    expect(await files("src/**/*.ts")).toEqual(["src/a.ts", "src/deep/c.ts"]);
    expect(await files("/src/*.ts")).toEqual(["src/a.ts"]);
    expect(await files("deep/*.ts", "src")).toEqual(["src/deep/c.ts"]);
  });
  test("a leading ! excludes matching files and prunes matching directories", async () => {
    expect(await files("!*.txt")).toEqual(["src/a.ts", "src/b.js", "src/deep/c.ts", "vendor/v.ts"]);
    expect(await files("!vendor")).not.toContain("vendor/v.ts");
    expect(await files("!src/deep")).toEqual(["bom.txt", "latin.txt", "long.txt", "multi.txt", "src/a.ts", "src/b.js", "vendor/v.ts"]);
  });
  test("an empty glob is no glob", async () => {
    expect((await search({ query: "hello", glob: "" })).returned).toBe(12);
  });
});

describe("search_text: global limit", () => {
  test("the search stops at limit + 1 hits and returns the first limit with truncated", async () => {
    const r = await search({ query: "hello", limit: 3 });
    expect(where(r)).toEqual(["bom.txt:1", "bom.txt:2", "latin.txt:1"]);
    expect(r).toMatchObject({ returned: 3, truncated: true });
  });
  test("exactly limit hits is not truncated", async () => {
    expect(await search({ query: "hello", limit: 12 })).toMatchObject({ returned: 12, truncated: false });
  });
  test("the default limit is min(default_search_results, max_search_results) and larger limits are capped", async () => {
    const { tools } = await mcp.client.listTools();
    const props = (tools.find((t) => t.name === "search_text")!.inputSchema as { properties: Record<string, unknown> }).properties;
    expect(props["limit"]).toMatchObject({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, default: 50 });
    expect(props["case_sensitive"]).toMatchObject({ default: true });
    expect(props["glob"]).toMatchObject({ default: null });
    expect((await search({ query: "o", limit: 100_000 }, "hid")).returned).toBeLessThanOrEqual(100);
  });
});

describe("search_text: query rules and privacy", () => {
  test("an empty query or one holding \\n is INVALID_ARGUMENT", async () => {
    expect(errorCode(await mcp.call("search_text", { workdir: "repo", query: "" }))).toBe("INVALID_ARGUMENT");
    expect(errorCode(await mcp.call("search_text", { workdir: "repo", query: "a\nb" }))).toBe("INVALID_ARGUMENT");
  });
  test("the query is never logged and never echoed in errors", async () => {
    const secret = "zq-unique-query-7f3a";
    const { record } = await callAudited(mcp, "search_text", { workdir: "repo", query: secret, glob: "*zq-glob*" });
    expect(record).toMatchObject({ tool: "search_text", success: true, path: "", returned: 0, truncated: false });
    const bad = await mcp.call("search_text", { workdir: "repo", query: `${secret}\n` });
    expect(JSON.stringify(bad.content)).not.toContain(secret);
    expect(mcp.stderr()).not.toContain(secret);
    expect(mcp.stderr()).not.toContain("zq-glob");
  });
});

describe("search_text: deadline", () => {
  /**
   * The reference for "promptly": how long the whole slow search would take on this machine now,
   * from the time one of its files takes in this run (the search reads all of them, on as many
   * workers as there are cores).
   */
  const wholeSlowSearchMs = async (session: McpSession) => {
    const started = performance.now();
    expect(errorCode(await session.call("search_text", { workdir: "slow", query: "zébra", case_sensitive: false, glob: "0.txt" }))).toBeNull();
    return ((performance.now() - started) * (SLOW_LINKS + 1)) / availableParallelism();
  };

  test("past search_timeout_seconds the call fails whole with SEARCH_TIMEOUT, promptly", async () => {
    const timed = await startInProcess(slowConfig);
    try {
      const wholeMs = await wholeSlowSearchMs(timed);
      const started = performance.now();
      const r = await timed.call("search_text", { workdir: "slow", query: "zébra", case_sensitive: false });
      const elapsed = performance.now() - started;
      expect(errorCode(r)).toBe("SEARCH_TIMEOUT");
      expect(r.structuredContent).toBeUndefined();
      expect(elapsed).toBeGreaterThanOrEqual(900);
      // at its 1 s deadline, not when the scan would have ended
      expect(elapsed).toBeLessThan(wholeMs / 2);
      // The server is still responsive afterwards.
      expect(errorCode(await timed.call("search_text", { workdir: "repo", query: "hello" }))).toBeNull();
    } finally {
      await timed.close();
    }
  }, 20_000);

  test("stdin EOF ends the process while a search runs, long before the search would end", async () => {
    const reference = await startStdio(eofConfig);
    const wholeMs = await wholeSlowSearchMs(reference).finally(() => reference.close());
    const proc = Bun.spawn([BUN, CLI, "mcp", "--config", eofConfig], {
      cwd: REPO_ROOT,
      stdin: "pipe",
      stdout: "pipe",
      stderr: "ignore",
    });
    const send = (msg: unknown) => proc.stdin.write(`${JSON.stringify(msg)}\n`);
    send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } });
    const reader = proc.stdout.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('"id":1');
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    send({
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "search_text", arguments: { workdir: "slow", query: "zébra", case_sensitive: false } },
    });
    // the search is under way when stdin closes (EOF mid-call is the case under test)
    await Bun.sleep(300);
    const closedAt = performance.now();
    await proc.stdin.end();
    const code = await Promise.race([proc.exited, Bun.sleep(5000).then(() => "still running")]);
    if (code === "still running") proc.kill();
    expect(code).toBe(0);
    expect(performance.now() - closedAt).toBeLessThan(wholeMs / 2);
    // An abandoned call writes no response.
    const rest = await reader.read();
    expect(rest.done ? "" : new TextDecoder().decode(rest.value)).not.toContain('"id":2');
  }, 20_000);
});
