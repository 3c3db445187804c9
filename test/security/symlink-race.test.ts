/**
 * Race-safe confinement (docs/mcp-tools.md#traversal-by-handle-and-symlinks, docs/mcp-tools.md#special-files): while another process swaps objects inside
 * the workdir for stand-ins as fast as it can, the tools keep working on those paths. Every
 * segment is opened relative to its parent's handle without following a link, and the final
 * open is no-follow and non-blocking, so a call either works on the real object (wherever it is by
 * then, still inside the workdir) or refuses the stand-in; it never reads, lists, writes or
 * deletes anything in `outside/`, and a FIFO swapped in never blocks it. Outside holds twins of
 * every inside name (same names, canary contents) plus canary-only names, so a call that followed
 * a link would visibly succeed there; its access times are watched, so even a read or a listing
 * that leaked nothing would show.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { lstatSync, renameSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { CODE_PATTERN, errorCode, type McpSession } from "../helpers/mcp-client.ts";
import { startInProcess } from "../helpers/mcp-in-process.ts";
import { BUN, REPO_ROOT, type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";
import { snapshotTree, WatchedTree } from "./tree-snapshot.ts";

const SWAP_MS = 3_000;
const WORKERS = 3;
const MAX_ROUNDS = 60;
/** A call that blocks (say, on a FIFO) fails the test instead of hanging it. */
const CALL_TIMEOUT_MS = 10_000;
const CANARY = "CANARY";
const BLOB = Buffer.from([1, 2, 3, 250, 0, 7]);
const STALE = "v1:0000000000000000";

let dir: TempDir;
let mcp: McpSession;
let outside: WatchedTree;
let ws: string;

/** The outcomes of one race's calls, and everything that broke the contract. */
class Race {
  readonly codes = new Map<string, number>();
  readonly problems: string[] = [];

  constructor(private readonly allowed: ReadonlySet<string>) {}

  private record(label: string, code: string, text: string): void {
    this.codes.set(code, (this.codes.get(code) ?? 0) + 1);
    if (code !== "ok" && !this.allowed.has(code)) this.problems.push(`${label}: unexpected ${text}`);
    if (text.includes(CANARY)) this.problems.push(`${label}: outside leaked into ${text}`);
    if (text.includes(dir.path)) this.problems.push(`${label}: a host path leaked`);
  }

  async call(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    const r = (await mcp.client.callTool({ name, arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS })) as CallToolResult;
    this.record(`${name} ${String(args["path"])}`, errorCode(r) ?? "ok", JSON.stringify(r));
    return r;
  }

  /** The text of a resource read, or null when it failed. */
  async resource(path: string): Promise<string | null> {
    try {
      const r = await mcp.client.readResource({ uri: `serverfs://ws/${path}` }, { timeout: CALL_TIMEOUT_MS });
      this.record(`resource ${path}`, "ok", JSON.stringify(r));
      return (r.contents[0] as { text: string }).text;
    } catch (e) {
      const text = (e as Error).message.replace(/^MCP error -?\d+: /, "");
      this.record(`resource ${path}`, CODE_PATTERN.exec(text)?.[1] ?? text, text);
      return null;
    }
  }

  count(code: string): number {
    return this.codes.get(code) ?? 0;
  }

  total(): number {
    return [...this.codes.values()].reduce((a, b) => a + b, 0);
  }
}

const ok = (r: CallToolResult) => !r.isError;
const field = <T>(r: CallToolResult, key: string) => (r.structuredContent as Record<string, unknown>)[key] as T;
const sha256 = (b: Uint8Array) => new Bun.CryptoHasher("sha256").update(b).digest("hex");

/** `[real, stand-in]` path pairs the swapper exchanges. */
type Pairs = [string, string][];
const live: { proc: ReturnType<typeof Bun.spawn>; pairs: Pairs }[] = [];

/** Puts every real object back at its own name (after a swapper was killed mid-swap). */
function restore(pairs: Pairs): void {
  for (const [real, standIn] of pairs) {
    const st = lstatSync(real);
    if (st.isDirectory() || st.isFile()) continue;
    renameSync(real, `${real}.parked`);
    renameSync(standIn, real);
    renameSync(`${real}.parked`, standIn);
  }
}

/**
 * Runs `round(worker, i)` in WORKERS concurrent loops while the swapper exchanges `pairs`, then
 * returns the swapper's swap count (it exits on its own after SWAP_MS, real objects in place).
 */
async function raceWhile(pairs: Pairs, round: (w: number, i: number) => Promise<void>): Promise<number> {
  const proc = Bun.spawn([BUN, join(REPO_ROOT, "test/fixtures/symlink-swapper.ts"), String(SWAP_MS), ...pairs.flat()], {
    stdout: "pipe",
    stderr: "pipe",
  });
  live.push({ proc, pairs });
  let swapping = true;
  const done = proc.exited.then(() => {
    swapping = false;
  });
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, w) => {
      for (let i = 0; i < MAX_ROUNDS && swapping; i++) await round(w, i);
    }),
  );
  await done;
  expect(proc.exitCode).toBe(0);
  return (JSON.parse(await new Response(proc.stdout as ReadableStream).text()) as { swaps: number }).swaps;
}

beforeAll(async () => {
  dir = tempDir("serverfs-race-");
  ws = join(dir.path, "ws");
  dir.file("ws/d/file.txt", "inside line\n");
  dir.file("ws/d/edit.txt", "edit me\n");
  dir.file("ws/d/sub/f.txt", "inside sub\n");
  dir.file("ws/d/blob.bin", BLOB);
  dir.file("ws/f/t.txt", "inside line\n");
  dir.file("ws/f/u.txt", "fifo twin line\n");
  dir.file("outside/file.txt", `${CANARY} outside line\n`);
  dir.file("outside/edit.txt", "edit me\n");
  dir.file("outside/sub/f.txt", `${CANARY} outside sub\n`);
  dir.file("outside/blob.bin", `${CANARY} blob`);
  dir.file(`outside/${CANARY}-only.txt`, `${CANARY} line\n`);
  dir.file(`outside/${CANARY}-dir/x.txt`, `${CANARY} line\n`);
  // Twins of every name the workers create, so that a create, stat or delete that followed the
  // link would find its target there.
  for (let w = 0; w < WORKERS; w++) {
    for (let i = 0; i < MAX_ROUNDS; i++) {
      dir.file(`outside/v-${w}-${i}.txt`, `${CANARY}\n`);
      dir.dir(`outside/nd-${w}-${i}`);
    }
  }
  symlinkSync(join(dir.path, "outside"), join(ws, "d-swap"));
  symlinkSync(join(dir.path, "outside", "file.txt"), join(ws, "f", "t-swap"));
  expect(Bun.spawnSync(["mkfifo", join(ws, "f", "u-swap")]).exitCode).toBe(0);
  const config = writeConfig(dir.path, {
    workdirs: [{ slot: 1, alias: "ws", path: ws, read_only: false, binary_transfer_enabled: true }],
  });
  mcp = await startInProcess(config);
  outside = new WatchedTree(join(dir.path, "outside"));
});

afterAll(async () => {
  for (const { proc, pairs } of live) {
    if (proc.exitCode === null) {
      proc.kill();
      await proc.exited;
    }
    restore(pairs);
  }
  await mcp?.close();
  dir.remove();
});

describe("race-safe traversal: a parent directory swapped for a symlink to outside", () => {
  /** Mid-walk swaps turn an ELOOP into a directory by the time it is inspected: NOT_A_DIRECTORY (docs/mcp-tools.md#traversal-by-handle-and-symlinks). */
  const race = new Race(new Set(["SYMLINK_NOT_ALLOWED", "NOT_A_DIRECTORY", "PATH_NOT_FOUND", "REVISION_CONFLICT"]));

  /** One worker's round: every tool on paths under d/, mutations fed with revisions just read. */
  async function round(w: number, i: number): Promise<void> {
    const workdir = "ws";
    const read = await race.call("read_text_file", { workdir, path: "d/file.txt" });
    if (ok(read) && field(read, "content") !== "inside line\n") race.problems.push("read returned other content");
    const deep = await race.call("read_text_file", { workdir, path: "d/sub/f.txt" });
    if (ok(deep) && field(deep, "content") !== "inside sub\n") race.problems.push("deep read returned other content");
    const text = await race.resource("d/file.txt");
    if (text !== null && text !== "inside line\n") race.problems.push("resource returned other content");
    await race.call("list_directory", { workdir, path: "d" });
    await race.call("list_directory", { workdir, path: "d/sub" });
    await race.call("find_files", { workdir, path: "d", pattern: "*" });
    await race.call("find_files", { workdir, pattern: "*.txt" });
    await race.call("search_text", { workdir, path: "d", query: "line" });
    await race.call("search_text", { workdir, query: "line" });

    const edit = await race.call("stat_file", { workdir, path: "d/edit.txt" });
    if (ok(edit)) {
      const edits = [{ old_text: "edit me", new_text: "edit me" }];
      await race.call("edit_text_file", { workdir, path: "d/edit.txt", expected_revision: field<string>(edit, "revision"), edits });
    }

    const victim = `d/v-${w}-${i}.txt`;
    await race.call("create_text_file", { workdir, path: victim, content: "victim\n" });
    const v = await race.call("stat_file", { workdir, path: victim });
    if (ok(v)) await race.call("delete_file", { workdir, path: victim, expected_revision: field<string>(v, "revision") });

    const sub = `d/nd-${w}-${i}`;
    await race.call("create_directory", { workdir, path: sub });
    const s = await race.call("stat_file", { workdir, path: sub });
    if (ok(s)) await race.call("delete_directory", { workdir, path: sub, expected_revision: field<string>(s, "revision") });

    await race.call("upload_binary_file", { workdir, path: `d/u-${w}-${i}.bin`, data_base64: BLOB.toString("base64") });
    const down = await race.call("download_binary_file", { workdir, path: "d/blob.bin" });
    if (ok(down) && field(down, "sha256") !== sha256(BLOB)) race.problems.push("download returned other bytes");
  }

  test("reads, listings, walks, edits, creates, deletes and transfers under d/ never touch outside", async () => {
    const swaps = await raceWhile([[join(ws, "d"), join(ws, "d-swap")]], round);
    expect(race.problems).toEqual([]);
    // The race really happened: calls met the symlink and calls got through the real directory.
    expect(swaps).toBeGreaterThan(0);
    expect(race.count("SYMLINK_NOT_ALLOWED")).toBeGreaterThan(0);
    expect(race.count("ok")).toBeGreaterThan(0);
    expect(race.total()).toBeGreaterThanOrEqual(100);
    // Nothing outside was created, changed, deleted, read or listed.
    expect(outside.current()).toEqual(outside.baseline);
    expect(lstatSync(join(ws, "d")).isDirectory()).toBe(true);
    // No refused or interrupted publish left a temp file behind.
    expect(Object.keys(snapshotTree(ws)).filter((p) => p.includes(".serverfs-tmp-"))).toEqual([]);
  }, 60_000);
});

describe("a final file swapped for a symlink to outside or a FIFO between its stat and its open", () => {
  /** Each exchange renames the file itself, which moves its ctime and so its revision (docs/mcp-tools.md#revisions). */
  const race = new Race(new Set(["SYMLINK_NOT_ALLOWED", "UNSUPPORTED_FILE_TYPE", "REVISION_CONFLICT", "FILE_CHANGED_DURING_READ"]));

  /** Every call that opens the final name; the mutations carry a stale revision and never commit. */
  async function round(): Promise<void> {
    const workdir = "ws";
    for (const path of ["f/t.txt", "f/u.txt"]) {
      const want = path === "f/t.txt" ? "inside line\n" : "fifo twin line\n";
      const read = await race.call("read_text_file", { workdir, path });
      if (ok(read) && field(read, "content") !== want) race.problems.push(`${path}: read returned other content`);
      const text = await race.resource(path);
      if (text !== null && text !== want) race.problems.push(`${path}: resource returned other content`);
      const down = await race.call("download_binary_file", { workdir, path });
      if (ok(down) && field(down, "sha256") !== sha256(Buffer.from(want))) race.problems.push(`${path}: download returned other bytes`);
      await race.call("stat_file", { workdir, path });
      await race.call("edit_text_file", { workdir, path, expected_revision: STALE, edits: [{ old_text: "line", new_text: "LINE" }] });
      await race.call("delete_file", { workdir, path, expected_revision: STALE });
      await race.call("upload_binary_file", { workdir, path, data_base64: "aGk=", overwrite: true, expected_revision: STALE });
    }
    await race.call("search_text", { workdir, path: "f", query: "line" });
    await race.call("list_directory", { workdir, path: "f" });
  }

  test("reads, transfers and replace attempts neither follow the symlink nor block on the FIFO", async () => {
    const pairs: Pairs = [
      [join(ws, "f", "t.txt"), join(ws, "f", "t-swap")],
      [join(ws, "f", "u.txt"), join(ws, "f", "u-swap")],
    ];
    const swaps = await raceWhile(pairs, round);
    expect(race.problems).toEqual([]);
    expect(swaps).toBeGreaterThan(0);
    expect(race.count("SYMLINK_NOT_ALLOWED")).toBeGreaterThan(0);
    expect(race.count("UNSUPPORTED_FILE_TYPE")).toBeGreaterThan(0);
    expect(race.count("ok")).toBeGreaterThan(0);
    expect(outside.current()).toEqual(outside.baseline);
    expect(lstatSync(pairs[0]![0]).isFile() && lstatSync(pairs[1]![0]).isFile()).toBe(true);
  }, 60_000);
});
