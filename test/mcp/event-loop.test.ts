/**
 * No request pins the event loop, and reads are bounded before they scan (docs/reliability.md,
 * "Hardening: the event loop, reads and memory"). Each heavy tool runs against a fixture that held
 * the old server's main thread for hundreds of milliseconds to minutes, while `measureStall` checks
 * that a concurrent `list_workdirs` is still answered within 200 ms; stdin EOF still ends the
 * process within a second while such a call runs; heavy calls queue within their deadline.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { closeSync, openSync, readdirSync, truncateSync, writeSync } from "node:fs";
import { errorCode, type McpSession, startStdio, structured } from "../helpers/mcp-client.ts";
import { holdsWithin } from "../helpers/poll.ts";
import { closeWhileBusy, startRaw } from "../helpers/raw-stdio.ts";
import { describeStall, measureStall } from "../helpers/stall.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

const HUGE_ENTRIES = 150_000;
const STALL_MS = 200;
const LONG_NAME = "a".repeat(200);
/** Globs a backtracking matcher needs minutes for against a 200-character name of `a`s. */
const ADVERSARIAL = [`${"*a".repeat(30)}*b`, `${"*?".repeat(30)}*b`, `${"a*".repeat(30)}[!a]`];

let dir: TempDir;
let config: string;
let mcp: McpSession;

beforeAll(async () => {
  dir = tempDir();
  // 150,000 entries in one directory: the old server read, sorted and stat-ed them on its main thread.
  const huge = dir.dir("huge");
  for (let i = 0; i < HUGE_ENTRIES; i++) closeSync(openSync(`${huge}/e-${String(i).padStart(6, "0")}.txt`, "w"));
  for (let i = 0; i < 3; i++) dir.file(`names/${LONG_NAME}${"a".repeat(i)}`, "x\n");
  dir.file(`names/${LONG_NAME}b`, "x\n");
  // One 48 MiB file of 25 million short lines, one of them not UTF-8, so a case-folded search for a
  // query outside ASCII decodes it line by line: the old server read and scanned it whole on its
  // main thread. (A query of ASCII is found in the bytes, in milliseconds.)
  dir.file("big/large.txt", Buffer.concat([Buffer.from("x\n".repeat(24 << 20)), Buffer.from([0xff, 0x0a])]));
  dir.file("big/small.txt", "hello\n");
  // Sparse files: 20 GiB of NUL, and 2 GiB whose first 2 KiB are text and the rest NUL.
  dir.file("files/sparse.bin", "");
  truncateSync(`${dir.path}/files/sparse.bin`, 20 * 2 ** 30);
  const scan = openSync(dir.file("files/scan.txt", ""), "w");
  writeSync(scan, "x".repeat(2048));
  closeSync(scan);
  truncateSync(`${dir.path}/files/scan.txt`, 2 * 2 ** 30);
  dir.file("files/lines.txt", Array.from({ length: 10 }, (_, i) => `${String(i + 1).padStart(99, "0")}\n`).join(""));
  config = writeConfig(dir.path, {
    workdirs: [
      { slot: 1, alias: "huge", path: huge },
      { slot: 2, alias: "names", path: `${dir.path}/names` },
      { slot: 3, alias: "big", path: `${dir.path}/big` },
      { slot: 4, alias: "files", path: `${dir.path}/files` },
    ],
  });
  mcp = await startStdio(config);
}, 120_000);
afterAll(async () => {
  await mcp?.close();
  dir?.remove();
});

const stalls = async (name: string, args: Record<string, unknown>) => {
  const s = await measureStall(mcp, () => mcp.call(name, args));
  expect(s.maxMs, describeStall(s)).toBeLessThan(STALL_MS);
  return s.result;
};

describe("glob matching is linear in the name", () => {
  for (const pattern of ADVERSARIAL) {
    test(`find_files and search_text answer ${pattern.slice(0, 10)}… against 200-character names at once`, async () => {
      const started = performance.now();
      const found = structured<{ matches: { path: string }[] }>(await mcp.call("find_files", { workdir: "names", pattern }));
      expect(found.matches.map((m) => m.path)).toEqual([`${LONG_NAME}b`]);
      const searched = structured<{ matches: { path: string }[] }>(await mcp.call("search_text", { workdir: "names", query: "x", glob: pattern }));
      expect(searched.matches.map((m) => m.path)).toEqual([`${LONG_NAME}b`]);
      expect(performance.now() - started).toBeLessThan(1000);
    }, 10_000);
  }
});

describe("no heavy call holds up the others (a concurrent list_workdirs within 200 ms)", () => {
  test("find_files through 150,000 entries of one directory", async () => {
    const r = structured<{ returned: number }>(await stalls("find_files", { workdir: "huge", pattern: "*.md" }));
    expect(r.returned).toBe(0);
  }, 30_000);
  test("search_text, case-folded, through a 48 MiB file", async () => {
    const r = structured<{ returned: number }>(await stalls("search_text", { workdir: "big", query: "ZÉBRA", case_sensitive: false }));
    expect(r.returned).toBe(0);
  }, 30_000);
  test("list_directory with a high offset in 150,000 entries, the page still exact", async () => {
    const r = structured<{ entries: { name: string }[]; has_more: boolean }>(
      await stalls("list_directory", { workdir: "huge", offset: HUGE_ENTRIES - 3, limit: 10 }),
    );
    expect(r.entries.map((e) => e.name)).toEqual([149_997, 149_998, 149_999].map((i) => `e-${i}.txt`));
    expect(r.has_more).toBe(false);
  }, 30_000);
  test("read_text_file seeking through 256 MiB of a newline-free file ends SCAN_LIMIT_EXCEEDED", async () => {
    expect(errorCode(await stalls("read_text_file", { workdir: "files", path: "scan.txt", start_line: 2 }))).toBe("SCAN_LIMIT_EXCEEDED");
  }, 30_000);
  test("stat_file of a 20 GiB file", async () => {
    expect(structured<{ size: number }>(await stalls("stat_file", { workdir: "files", path: "sparse.bin" })).size).toBe(20 * 2 ** 30);
  }, 30_000);
});

describe("reads are bounded before they scan", () => {
  test("a huge binary file is BINARY_FILE from its first bytes, before any line seek", async () => {
    const started = performance.now();
    expect(errorCode(await mcp.call("read_text_file", { workdir: "files", path: "sparse.bin", start_line: 1_000_000 }))).toBe("BINARY_FILE");
    expect(performance.now() - started).toBeLessThan(1000);
  });
  test("a seek within max_scan_bytes reads; one that would read past it is SCAN_LIMIT_EXCEEDED; past a short file's end is empty", async () => {
    const small = writeConfig(dir.path, { limits: { max_scan_bytes: 500 }, workdirs: [{ slot: 1, alias: "files", path: `${dir.path}/files` }] }, "scan.toml");
    const s = await startStdio(small);
    try {
      const read = (start_line: number) => s.call("read_text_file", { workdir: "files", path: "lines.txt", start_line, max_lines: 1 });
      // Line 6 starts at byte 500, the last the seek may reach; line 7 at 600, past it.
      expect(structured<{ content: string }>(await read(6)).content).toBe(`${"6".padStart(99, "0")}\n`);
      expect(errorCode(await read(7))).toBe("SCAN_LIMIT_EXCEEDED");
      expect(errorCode(await read(50))).toBe("SCAN_LIMIT_EXCEEDED");
      const text = (await read(7)).content[0] as { text: string };
      expect(text.text).toBe("SCAN_LIMIT_EXCEEDED: files:lines.txt: reaching line 7 would read past max_scan_bytes");
    } finally {
      await s.close();
    }
    const past = structured<{ content: string; end_line: number }>(await mcp.call("read_text_file", { workdir: "files", path: "lines.txt", start_line: 50 }));
    expect(past).toMatchObject({ content: "", end_line: 49 });
  }, 20_000);
});

describe("stdin EOF ends the process within a second while a heavy call runs", () => {
  const calls: [string, Record<string, unknown>][] = [
    ["find_files", { workdir: "huge", pattern: "*.md" }],
    ["list_directory", { workdir: "huge", offset: HUGE_ENTRIES - 1 }],
    ["read_text_file", { workdir: "files", path: "scan.txt", start_line: 2 }],
  ];
  for (const [name, args] of calls) {
    test(name, async () => {
      const raw = await startRaw(config);
      const { code, ms } = await closeWhileBusy(raw, name, args);
      expect(code).toBe(0);
      expect(ms).toBeLessThan(1000);
      // An abandoned call writes no answer.
      expect(raw.answered.has(1)).toBe(false);
    }, 20_000);
  }
});

describe("a stopped job ends its work and closes its handles", () => {
  test("after SEARCH_TIMEOUT mid-scan the worker lets go of every descriptor and serves the next search", async () => {
    const quick = writeConfig(
      dir.path,
      { limits: { search_timeout_seconds: 1 }, workdirs: [{ slot: 1, alias: "big", path: `${dir.path}/big` }] },
      "quick.toml",
    );
    const s = await startStdio(quick);
    const fds = () => readdirSync(`/proc/${s.pid!}/fd`).length;
    try {
      // The first search starts the worker, so the baseline counts its descriptors.
      expect(structured<{ returned: number }>(await s.call("search_text", { workdir: "big", query: "hello", glob: "small.txt" })).returned).toBe(1);
      const baseline = fds();
      const started = performance.now();
      expect(errorCode(await s.call("search_text", { workdir: "big", query: "ZÉBRA", case_sensitive: false }))).toBe("SEARCH_TIMEOUT");
      expect(performance.now() - started).toBeLessThan(3000);
      await holdsWithin(() => fds() <= baseline, 5000);
      expect(fds()).toBeLessThanOrEqual(baseline);
      expect(structured<{ returned: number }>(await s.call("search_text", { workdir: "big", query: "hello", glob: "small.txt" })).returned).toBe(1);
    } finally {
      await s.close();
    }
  }, 30_000);
});

describe("heavy calls queue within their own deadline", () => {
  test("past max_concurrent_heavy_calls a call waits, a search's wait counts against search_timeout_seconds, nothing is refused", async () => {
    const one = writeConfig(
      dir.path,
      {
        limits: { max_concurrent_heavy_calls: 1, search_timeout_seconds: 1, max_scan_bytes: 2 * 2 ** 30 },
        workdirs: [
          { slot: 1, alias: "files", path: `${dir.path}/files` },
          { slot: 2, alias: "big", path: `${dir.path}/big` },
        ],
      },
      "one-heavy.toml",
    );
    const s = await startStdio(one);
    try {
      // A seek through all 2 GiB (no line 2: an empty page) holds the only heavy-call unit for seconds.
      const seek = s.call("read_text_file", { workdir: "files", path: "scan.txt", start_line: 2 });
      const started = performance.now();
      const search = await s.call("search_text", { workdir: "big", path: "", query: "hello", glob: "small.txt" });
      const waited = performance.now() - started;
      expect(errorCode(search)).toBe("SEARCH_TIMEOUT");
      expect(waited).toBeGreaterThanOrEqual(900);
      expect(waited).toBeLessThan(3000);
      // A call without a deadline waits its turn and is answered, not refused.
      const find = s.call("find_files", { workdir: "big", pattern: "small.txt" });
      expect(structured<{ content: string }>(await seek).content).toBe("");
      expect(structured<{ returned: number }>(await find).returned).toBe(1);
    } finally {
      await s.close();
    }
  }, 30_000);
});
