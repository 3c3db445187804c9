/**
 * find_files and search_text walk in parts on the walk pool's threads (src/main/mcp/fs/parallel-walk.ts,
 * docs/mcp-tools.md#read-tools): the answer is exactly a one-thread walk's. The tree holds more entries
 * than one part reads, so the walk is cut, including inside a deferred part, next to names whose UTF-16
 * order is not their byte order, hidden, denied and VCS entries and symlinks. Each call is made to a
 * server with `search_workers = 1` (the whole walk in one part) and to one with 4, and both answers are
 * compared with the order computed here. A walk stopped at its deadline lets go of every descriptor and
 * keeps its threads; stdin EOF still ends the process while parts run.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { linkSync, symlinkSync } from "node:fs";
import { errorCode, type McpSession, startStdio, structured } from "../helpers/mcp-client.ts";
import { startInProcess } from "../helpers/mcp-in-process.ts";
import { poll } from "../helpers/poll.ts";
import { openFds, workerThreads } from "../helpers/proc-counts.ts";
import { startRaw } from "../helpers/raw-stdio.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

interface Answer<M> {
  matches: M[];
  returned: number;
  truncated: boolean;
}
type Found = Answer<{ path: string }>;
type Searched = Answer<{ path: string; line: number; text: string }>;

/** U+FF5E sorts after U+1F600 in UTF-16 but before it in UTF-8. */
const WIDE = "\uFF5E";
const EMOJI = "\u{1F600}";

let dir: TempDir;
/** Every file the walk may yield, with its content. */
const files = new Map<string, string>();
const sessions: Record<"seq" | "par" | "seqCapped" | "parCapped", McpSession> = {} as never;

const utf8 = (s: string) => Buffer.from(s, "utf8");
/** Walk order of two paths: depth-first, each directory's entries by UTF-8 bytes. */
function walkOrder(a: string, b: string): number {
  const x = a.split("/");
  const y = b.split("/");
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return Buffer.compare(utf8(x[i]!), utf8(y[i]!));
  return x.length - y.length;
}
const expectedPaths = (keep: (path: string) => boolean) => [...files.keys()].filter(keep).sort(walkOrder);

function put(path: string, content: string) {
  dir.file(`ws/${path}`, content);
  files.set(path, content);
}

beforeAll(async () => {
  // In memory: making its 5,700 files and links on a loaded virtual disk took seconds; walks, their order
  // and parts, and reads are the same on any filesystem.
  dir = tempDir("serverfs-test-", { inMemory: true });
  for (let i = 0; i < 1200; i++) put(`a/f${String(i).padStart(4, "0")}.txt`, i % 100 === 0 ? `plain\nneedle ${i}\n` : "plain\n");
  for (let m = 0; m < 30; m++) {
    const d = `m${String(m).padStart(2, "0")}`;
    for (let g = 0; g < 40; g++) put(`${d}/g${String(g).padStart(2, "0")}.txt`, g === 7 ? "x\nneedle one\nNEEDLE two\n" : "x\n");
    put(`${d}/c.yml`, "needle: yml\n");
  }
  put("m05/s/t/u/v/w/x/y/z/deep.yml", "needle deep\n");
  // A deferred part large enough to defer a subdirectory of its own.
  for (let i = 0; i < 1100; i++) put(`m29/big/b${String(i).padStart(4, "0")}.txt`, "x\n");
  put("m29/zz/last.yml", "needle last\n");
  for (const name of [WIDE, EMOJI]) for (let i = 0; i < 3; i++) put(`${name}/n${i}.txt`, `needle ${name}\n`);
  // Never yielded: hidden, VCS, denied by the workdir and by default, symlinks.
  for (const p of [".h/n.yml", ".git/n.yml", "private/n.yml", "keys.pem", "m03/.hid/n.yml"]) dir.file(`ws/${p}`, "needle never\n");
  symlinkSync("m00", `${dir.path}/ws/link`);
  symlinkSync("../a/f0000.txt", `${dir.path}/ws/m01/l.yml`);

  const config = (workers: number, maxWalkEntries: number, name: string) =>
    writeConfig(
      dir.path,
      {
        limits: { search_workers: workers, max_search_results: 5000, max_walk_entries: maxWalkEntries },
        workdirs: [{ slot: 1, alias: "ws", path: `${dir.path}/ws`, extra_deny_globs: ["private/**"] }],
      },
      name,
    );
  // seq and par are processes: a test counts their threads; the capped pair only answers
  sessions.seq = await startStdio(config(1, 100_000, "seq.toml"));
  sessions.par = await startStdio(config(4, 100_000, "par.toml"));
  sessions.seqCapped = await startInProcess(config(1, 1500, "seq-capped.toml"));
  sessions.parCapped = await startInProcess(config(4, 1500, "par-capped.toml"));
}, 120_000);
afterAll(async () => {
  for (const s of Object.values(sessions)) await s?.close();
  dir?.remove();
});

async function both<A>(tool: string, args: Record<string, unknown>, capped = false): Promise<A> {
  const [one, many] = capped ? [sessions.seqCapped, sessions.parCapped] : [sessions.seq, sessions.par];
  const a = structured<A>(await one.call(tool, { workdir: "ws", ...args }));
  const b = structured<A>(await many.call(tool, { workdir: "ws", ...args }));
  expect(b).toEqual(a);
  return b;
}
const find = (args: Record<string, unknown>, capped = false) => both<Found>("find_files", args, capped);
const search = (args: Record<string, unknown>) => both<Searched>("search_text", args);
const paths = (a: Answer<{ path: string }>) => a.matches.map((m) => m.path);

describe("a walk in parts answers as a walk on one thread", () => {
  test("find_files: every match in walk order, and the parts ran on several threads", async () => {
    const all = await find({ pattern: "*.yml", limit: 5000 });
    expect(paths(all)).toEqual(expectedPaths((p) => p.endsWith(".yml")));
    expect(all.truncated).toBe(false);
    expect(workerThreads(sessions.par.pid!)).toBeGreaterThan(1);
    await poll(
      () => workerThreads(sessions.seq.pid!) === 1,
      10_000,
      () => `one worker for search_workers = 1 (${workerThreads(sessions.seq.pid!)})`,
    );
  });

  test("find_files: limit + 1 matches truncate at the same place, wherever the parts were cut", async () => {
    const everything = expectedPaths(() => true);
    for (const limit of [1, 10, 1199, 1201, 1250, 2441, everything.length - 1, everything.length]) {
      const r = await find({ pattern: "*", limit });
      expect(paths(r)).toEqual(everything.slice(0, limit));
      expect(r.truncated).toBe(limit < everything.length);
    }
  });

  test("find_files: max_walk_entries counts entries in walk order across parts", async () => {
    const r = await find({ pattern: "*", limit: 5000 }, true);
    expect(r.truncated).toBe(true);
    expect(r.returned).toBeGreaterThan(1000);
    expect(r.returned).toBeLessThan(1500);
    expect((await find({ pattern: "*.yml", limit: 5000 }, true)).truncated).toBe(true);
    expect(paths(await find({ pattern: "*", path: "m29/zz" }, true))).toEqual(["m29/zz/last.yml"]);
  });

  test("search_text: hits in walk order, lines ascending, the limit applied across parts", async () => {
    const all = await search({ query: "needle", limit: 5000 });
    const withNeedle = expectedPaths((p) => files.get(p)!.includes("needle"));
    expect([...new Set(paths(all))]).toEqual(withNeedle);
    expect(all.truncated).toBe(false);
    for (const limit of [1, 12, 13, 45]) {
      const r = await search({ query: "needle", limit });
      expect(r.matches).toEqual(all.matches.slice(0, limit));
      expect(r.truncated).toBe(true);
    }
  });

  test("search_text: case folding and globs, inclusive and exclusive, by name and by path", async () => {
    const folded = await search({ query: "NEEDLE", case_sensitive: false, limit: 5000 });
    expect(folded.matches.filter((m) => m.path === "m00/g07.txt").map((m) => m.line)).toEqual([2, 3]);
    for (const glob of ["!m1*", "m2*/**", "*.yml", "!big"]) {
      const r = await search({ query: "needle", glob, limit: 5000 });
      expect(r.returned).toBeGreaterThan(0);
    }
    expect(paths(await search({ query: "needle", glob: "!m2*", limit: 5000 })).some((p) => p.startsWith("m2"))).toBe(false);
  });

  test("nothing hidden, denied, VCS or behind a symlink is ever yielded", async () => {
    const yielded = [...paths(await find({ pattern: "*", limit: 5000 })), ...paths(await search({ query: "needle", limit: 5000 }))];
    for (const p of yielded) {
      expect(files.has(p)).toBe(true);
      expect(p.startsWith("link/")).toBe(false);
    }
  });
});

/** Links to the 4 MB file the slow searches read line by line: the whole search takes many seconds. */
const BIG_LINKS = 1200;

describe("a walk in parts that is stopped", () => {
  let slow: string;
  let slowNoDeadline: string;
  beforeAll(() => {
    // 1,000 tiny files first, so the first part defers b0..b3; then 1,200 links to a 4 MB file that is
    // not UTF-8 as a whole, which a case-folded search for a query outside ASCII reads line by line:
    // seconds of work.
    for (let i = 0; i < 1000; i++) dir.file(`slow/a/t${String(i).padStart(4, "0")}.txt`, "tiny\n");
    const big = dir.file("slow/big.dat", Buffer.concat([Buffer.from("the quick brown fox\n".repeat(200_000)), Buffer.from([0xff, 0x0a])]));
    for (let b = 0; b < 4; b++) for (let i = 0; i < BIG_LINKS / 4; i++) linkSync(big, `${dir.dir(`slow/b${b}`)}/${i}.txt`);
    const workdirs = [{ slot: 1, alias: "slow", path: `${dir.path}/slow` }];
    // a deadline the quick searches meet on a loaded machine too, far below what the whole slow one takes
    slow = writeConfig(dir.path, { limits: { search_workers: 3, search_timeout_seconds: 3 }, workdirs }, "slow.toml");
    // the default deadline (15 s): the search outlasts the test unless something stops it
    slowNoDeadline = writeConfig(dir.path, { limits: { search_workers: 3 }, workdirs }, "slow-no-deadline.toml");
  }, 120_000);

  test("at SEARCH_TIMEOUT every part lets go of its descriptors, the threads stay, the next search is served", async () => {
    const s = await startStdio(slow);
    const pid = s.pid!;
    const tiny = async () => structured<Searched>(await s.call("search_text", { workdir: "slow", query: "tiny", glob: "t000*.txt" }));
    try {
      // Walks everything but reads only ten files: its parts start all three workers (a thread is
      // named only once it runs, so the count is waited for).
      expect((await tiny()).returned).toBe(10);
      await poll(
        () => workerThreads(pid) === 3,
        10_000,
        () => `three workers (${workerThreads(pid)})`,
      );
      // the reference: the same search through one of the big files, in this run
      const oneFile = performance.now();
      expect(errorCode(await s.call("search_text", { workdir: "slow", path: "b0", query: "ZÉBRA", case_sensitive: false, glob: "0.txt" }))).toBeNull();
      const oneFileMs = performance.now() - oneFile;
      const baseline = openFds(pid);
      const started = performance.now();
      expect(errorCode(await s.call("search_text", { workdir: "slow", query: "ZÉBRA", case_sensitive: false }))).toBe("SEARCH_TIMEOUT");
      // at its 3 s deadline, not once all the big files were read (a third of them each on three workers)
      const wholeSearchMs = (BIG_LINKS / 3) * oneFileMs;
      expect(performance.now() - started).toBeLessThan(wholeSearchMs / 2);
      await poll(() => openFds(pid) <= baseline, 10_000, "descriptors back to the baseline");
      await poll(
        () => workerThreads(pid) === 3,
        10_000,
        () => `the three workers kept (${workerThreads(pid)})`,
      );
      expect((await tiny()).returned).toBe(10);
    } finally {
      await s.close();
    }
  }, 30_000);

  test("stdin EOF ends the process while parts run on every worker, without waiting for them", async () => {
    // no deadline within the test: the search reads 1,200 files of 4 MB line by line, far longer than
    // the 5 s closeWhileBusy waits, so exiting at all proves the exit did not wait for its parts
    const raw = await startRaw(slowNoDeadline);
    try {
      raw.callTool(1, "search_text", { workdir: "slow", query: "ZÉBRA", case_sensitive: false });
      await poll(() => workerThreads(raw.proc.pid) === 3, 10_000, "three workers running parts");
      raw.callTool(2, "list_workdirs", {});
      await raw.answer(2);
      raw.proc.stdin.end();
      const code = await Promise.race([raw.proc.exited, Bun.sleep(5000).then(() => "still running")]);
      expect(code).toBe(0);
      expect(raw.answered.has(1)).toBe(false);
    } finally {
      raw.proc.kill("SIGKILL");
    }
  }, 30_000);
});
