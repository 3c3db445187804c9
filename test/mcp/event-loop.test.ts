/**
 * No request pins the event loop, and reads are bounded before they scan (docs/reliability.md,
 * "Hardening: the event loop, reads and memory"). Each heavy tool runs against a fixture that held
 * the old server's main thread for hundreds of milliseconds to minutes, while `measureStall` checks
 * that a concurrent `list_workdirs` is still answered while it runs, none waiting half as long as the
 * call; stdin EOF still ends the process, long before such a call would, while it runs; heavy calls
 * queue within their deadline. Durations are only ever compared with others of the same run.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { closeSync, openSync, readdirSync, readFileSync, truncateSync, writeSync } from "node:fs";
import { errorCode, type McpSession, startStdio, structured } from "../helpers/mcp-client.ts";
import { poll } from "../helpers/poll.ts";
import { closeWhileBusy, startRaw } from "../helpers/raw-stdio.ts";
import { describeStall, measureStall } from "../helpers/stall.ts";
import { cpuRatio } from "../helpers/timing.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

const HUGE_ENTRIES = 150_000;
const LONG_NAME = "a".repeat(200);
/** Globs a backtracking matcher needs minutes for against a 200-character name of `a`s. */
const ADVERSARIAL = [`${"*a".repeat(30)}*b`, `${"*?".repeat(30)}*b`, `${"a*".repeat(30)}[!a]`];

let dir: TempDir;
let hugeDir: TempDir;
let config: string;
let wholeScanConfig: string;
let mcp: McpSession;

beforeAll(async () => {
  dir = tempDir();
  // 150,000 entries in one directory: the old server read, sorted and stat-ed them on its main thread.
  // In memory: creating them on a loaded virtual disk takes minutes (the reads below stay on disk,
  // where they take the seconds the tests rely on).
  hugeDir = tempDir("serverfs-test-", { inMemory: true });
  const huge = hugeDir.path;
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
  const workdirs = [
    { slot: 1, alias: "huge", path: huge },
    { slot: 2, alias: "names", path: `${dir.path}/names` },
    { slot: 3, alias: "big", path: `${dir.path}/big` },
    { slot: 4, alias: "files", path: `${dir.path}/files` },
  ];
  // the tests here are about the loop, not the deadline: the 48 MiB search must end on its own
  // however loaded the machine (it took over the default 15 s under a burner on every core)
  config = writeConfig(dir.path, { limits: { search_timeout_seconds: 300 }, workdirs });
  // a seek through all 2 GiB of scan.txt: long enough to tell an exit that waits for it from one that does not
  wholeScanConfig = writeConfig(dir.path, { limits: { max_scan_bytes: 2 * 2 ** 30, search_timeout_seconds: 300 }, workdirs }, "whole-scan.toml");
  mcp = await startStdio(config);
}, 180_000);
afterAll(async () => {
  await mcp?.close();
  dir?.remove();
  hugeDir?.remove();
}, 60_000);

/**
 * The event loop turned while the call ran: probes were answered before it was, and none waited half
 * as long as the call. A call that holds the main thread keeps the probe sent right after it waiting
 * for (nearly) all of it, however loaded the machine; a loaded machine slows probes and call alike.
 */
const stalls = async (name: string, args: Record<string, unknown>) => {
  const s = await measureStall(mcp, () => mcp.call(name, args));
  expect(s.answeredDuring, describeStall(s)).toBeGreaterThanOrEqual(2);
  expect(s.maxMs, describeStall(s)).toBeLessThan(s.heavyMs / 2);
  return s.result;
};

/** A search that decodes all of big/large.txt line by line: seconds of work. */
const FOLDED_SEARCH = { workdir: "big", query: "ZÉBRA", case_sensitive: false };
let foldedSearchMs: number | undefined;
/** How long FOLDED_SEARCH takes to its end on this machine now (once per file): the reference for its deadline. */
async function foldedSearchFullMs(): Promise<number> {
  if (foldedSearchMs === undefined) {
    const started = performance.now();
    expect(structured<{ returned: number }>(await mcp.call("search_text", FOLDED_SEARCH)).returned).toBe(0);
    foldedSearchMs = performance.now() - started;
  }
  return foldedSearchMs;
}

/** Bytes the server process read (every thread, every descriptor) while `call` ran: /proc/<pid>/io `rchar`. */
async function bytesReadBy(pid: number, call: () => Promise<unknown>): Promise<number> {
  const rchar = () => Number(/^rchar: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, "utf8"))![1]);
  const before = rchar();
  await call();
  return rchar() - before;
}

describe("glob matching is linear in the name", () => {
  for (const pattern of ADVERSARIAL) {
    test(`find_files and search_text answer ${pattern.slice(0, 10)}… against 200-character names as fast as a plain glob`, async () => {
      const both = (glob: string) => async () => {
        const found = structured<{ matches: { path: string }[] }>(await mcp.call("find_files", { workdir: "names", pattern: glob }));
        expect(found.matches.map((m) => m.path)).toEqual([`${LONG_NAME}b`]);
        const searched = structured<{ matches: { path: string }[] }>(await mcp.call("search_text", { workdir: "names", query: "x", glob }));
        expect(searched.matches.map((m) => m.path)).toEqual([`${LONG_NAME}b`]);
      };
      // a backtracking matcher takes minutes on these names; a linear one costs what `*b` costs
      expect(await cpuRatio(both(pattern), both("*b"), { pid: mcp.pid! })).toBeLessThan(8);
    }, 30_000);
  }
});

describe("no heavy call holds up the others (a concurrent list_workdirs within 200 ms)", () => {
  test("find_files through 150,000 entries of one directory", async () => {
    const r = structured<{ returned: number }>(await stalls("find_files", { workdir: "huge", pattern: "*.md" }));
    expect(r.returned).toBe(0);
  }, 30_000);
  test("search_text, case-folded, through a 48 MiB file", async () => {
    const r = structured<{ returned: number }>(await stalls("search_text", FOLDED_SEARCH));
    expect(r.returned).toBe(0);
  }, 60_000);
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
  test("stat_file of a 20 GiB file reads none of it (so it has nothing to hold the loop with)", async () => {
    // too quick to probe while it runs: what it reads is the fact (the old server read the whole file)
    let size = 0;
    const read = await bytesReadBy(mcp.pid!, async () => {
      size = structured<{ size: number }>(await mcp.call("stat_file", { workdir: "files", path: "sparse.bin" })).size;
    });
    expect(size).toBe(20 * 2 ** 30);
    expect(read).toBeLessThan(64 * 1024);
  }, 30_000);
});

describe("reads are bounded before they scan", () => {
  test("a huge binary file is BINARY_FILE from its first bytes, before any line seek", async () => {
    const read = await bytesReadBy(mcp.pid!, async () => {
      expect(errorCode(await mcp.call("read_text_file", { workdir: "files", path: "sparse.bin", start_line: 1_000_000 }))).toBe("BINARY_FILE");
    });
    // its first 1,024 bytes and the request; a seek would read up to max_scan_bytes (256 MiB)
    expect(read).toBeLessThan(64 * 1024);
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

describe("stdin EOF ends the process while a heavy call runs, long before the call would end", () => {
  const calls: [string, Record<string, unknown>][] = [
    ["find_files", { workdir: "huge", pattern: "*.md" }],
    ["list_directory", { workdir: "huge", offset: HUGE_ENTRIES - 1 }],
    ["read_text_file", { workdir: "files", path: "scan.txt", start_line: 2 }],
  ];
  for (const [name, args] of calls) {
    test(name, async () => {
      const raw = await startRaw(wholeScanConfig);
      try {
        // the reference: the same call run to its end on the same server, in this run
        const started = performance.now();
        raw.callTool(9, name, args);
        await raw.answer(9);
        const fullMs = performance.now() - started;
        const { code, ms } = await closeWhileBusy(raw, name, args);
        expect(code).toBe(0);
        expect(ms).toBeLessThan(fullMs / 2);
        // An abandoned call writes no answer.
        expect(raw.answered.has(1)).toBe(false);
      } finally {
        raw.proc.kill("SIGKILL");
      }
    }, 120_000);
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
      expect(errorCode(await s.call("search_text", FOLDED_SEARCH))).toBe("SEARCH_TIMEOUT");
      // answered at its 1 s deadline, before the scan would have ended (measured in this run); not half
      // of it: on a quiet machine the whole scan takes under 2 s, so half of it is below the deadline itself
      expect(performance.now() - started).toBeLessThan(await foldedSearchFullMs());
      await poll(() => fds() <= baseline, 10_000, "descriptors back to the baseline");
      expect(structured<{ returned: number }>(await s.call("search_text", { workdir: "big", query: "hello", glob: "small.txt" })).returned).toBe(1);
    } finally {
      await s.close();
    }
  }, 30_000);
});

describe("heavy calls queue within their own deadline", () => {
  test("past max_concurrent_heavy_calls a call waits, a search's wait counts against search_timeout_seconds, nothing is refused", async () => {
    // The seek that holds the only unit must outlast the search's 1 s deadline several times over on
    // this machine now: its file is sized from the time a seek through a fresh 2 GiB file takes here,
    // in this run. (Fresh: the page cache keeps the zeros of a hole once read, and a second seek
    // through the same file takes a fraction of the first.)
    const GiB = 2 ** 30;
    const sparse = (name: string, bytes: number) => {
      dir.file(`files/${name}`, "x".repeat(2048));
      truncateSync(`${dir.path}/files/${name}`, bytes);
    };
    const oneHeavy = (bytes: number, name: string) =>
      writeConfig(
        dir.path,
        {
          limits: { max_concurrent_heavy_calls: 1, search_timeout_seconds: 1, max_scan_bytes: bytes },
          workdirs: [
            { slot: 1, alias: "files", path: `${dir.path}/files` },
            { slot: 2, alias: "big", path: `${dir.path}/big` },
          ],
        },
        name,
      );
    sparse("hold-probe.txt", 2 * GiB);
    const probe = await startStdio(oneHeavy(2 * GiB, "hold-probe.toml"));
    const probeStarted = performance.now();
    expect(structured<{ content: string }>(await probe.call("read_text_file", { workdir: "files", path: "hold-probe.txt", start_line: 2 })).content).toBe("");
    const probeMs = performance.now() - probeStarted;
    await probe.close();
    const holdBytes = 2 * GiB * Math.max(1, Math.ceil(5000 / probeMs));
    sparse("hold.txt", holdBytes);
    const s = await startStdio(oneHeavy(holdBytes, "one-heavy.toml"));
    try {
      // A seek through the whole file (no line 2: an empty page) holds the only heavy-call unit for seconds.
      const seek = s.call("read_text_file", { workdir: "files", path: "hold.txt", start_line: 2 });
      let seekAnswered = false;
      void seek.then(() => (seekAnswered = true));
      const started = performance.now();
      const search = await s.call("search_text", { workdir: "big", path: "", query: "hello", glob: "small.txt" });
      const waited = performance.now() - started;
      expect(errorCode(search)).toBe("SEARCH_TIMEOUT");
      // it waited its whole deadline (a wait never ends early), and ended there: before the seek it queued behind
      expect(waited).toBeGreaterThanOrEqual(900);
      expect(seekAnswered).toBe(false);
      // A call without a deadline waits its turn and is answered, not refused.
      const find = s.call("find_files", { workdir: "big", pattern: "small.txt" });
      expect(structured<{ content: string }>(await seek).content).toBe("");
      expect(structured<{ returned: number }>(await find).returned).toBe(1);
    } finally {
      await s.close();
    }
  }, 120_000);
});
