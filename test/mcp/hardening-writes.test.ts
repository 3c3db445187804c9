/**
 * Hardening of writes across processes (docs/reliability.md, "Hardening: writes, temp files,
 * transfers and HTTP"): no update lost between two `serverfs mcp` processes, content never
 * readable by others while in flight, and temp files of a killed writer never accumulate.
 *
 * Holding the workdir root's flock from another process stops a writer at a known point: its
 * temp file is complete and it waits for the lock to publish.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { holdFlock, releaseAllFlocks } from "../helpers/flock-holder.ts";
import { errorCode, type McpSession, startStdio, structured } from "../helpers/mcp-client.ts";
import { poll } from "../helpers/poll.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

let dir: TempDir;
let rw: string;
let config: string;
let patientConfig: string;
let a: McpSession;
let b: McpSession;
/** Waits long for the workdir lock, so a test can hold it and release it at leisure. */
let patient: McpSession;

const LOCK_WAIT_MS = 400;
const TEMP = /^\.serverfs-tmp-[0-9a-f]{16}$/;

const revision = async (s: McpSession, path: string) => structured<{ revision: string }>(await s.call("stat_file", { workdir: "rw", path })).revision;
const temps = (rel: string) => readdirSync(join(rw, rel)).filter((n) => TEMP.test(n));

/** Polls until a temp file of `size` bytes sits in `rel` (its writer is waiting to publish). */
async function waitForCompleteTemp(rel: string, size: number): Promise<string> {
  let found: string | undefined;
  await poll(
    () => {
      found = temps(rel).find((n) => statSync(join(rw, rel, n)).size === size);
      return found !== undefined;
    },
    10_000,
    `a complete temp file in ${rel}`,
  );
  return join(rw, rel, found!);
}

beforeAll(async () => {
  dir = tempDir();
  rw = dir.dir("rw");
  const workdirs = [{ slot: 1, alias: "rw", path: rw, read_only: false, binary_transfer_enabled: true }];
  config = writeConfig(dir.path, { limits: { mutation_lock_wait_ms: LOCK_WAIT_MS }, workdirs });
  patientConfig = writeConfig(dir.path, { limits: { mutation_lock_wait_ms: 60_000 }, workdirs }, "patient.toml");
  // The default setup: the Bridge disabled, so no writer lease at all.
  [a, b, patient] = await Promise.all([startStdio(config), startStdio(config), startStdio(patientConfig)]);
});
afterAll(async () => {
  releaseAllFlocks();
  await Promise.all([a.close(), b.close(), patient.close()]);
  dir.remove();
});

describe("no write is lost between processes", () => {
  test("two serverfs mcp processes editing one file with the same expected_revision: at most one succeeds, none is lost", async () => {
    dir.file("rw/race.txt", "END\n");
    const ROUNDS = 80;
    const won: string[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const rev = await revision(a, "race.txt");
      const edit = (s: McpSession, mark: string) =>
        s.call("edit_text_file", { workdir: "rw", path: "race.txt", expected_revision: rev, edits: [{ old_text: "END", new_text: `${mark}\nEND` }] });
      const results = await Promise.all([edit(a, `a${i}`), edit(b, `b${i}`)]);
      const codes = results.map(errorCode);
      // Exactly one wins a round (both read the same revision); the other is told, never silently lost.
      expect(codes.filter((c) => c === null).length).toBe(1);
      expect(codes.filter((c) => c !== null)).toEqual(["REVISION_CONFLICT"]);
      won.push(codes[0] === null ? `a${i}` : `b${i}`);
    }
    expect(readFileSync(join(rw, "race.txt"), "utf8")).toBe(`${won.join("\n")}\nEND\n`);
    expect(temps("")).toEqual([]);
  });

  test("while another process holds the workdir's lock a mutation waits for it, then publishes", async () => {
    dir.file("rw/waits.txt", "one\n");
    const rev = await revision(a, "waits.txt");
    const holder = await holdFlock(rw);
    let answered = false;
    const pending = patient.call("edit_text_file", { workdir: "rw", path: "waits.txt", expected_revision: rev, edits: [{ old_text: "one", new_text: "two" }] });
    void pending.then(() => {
      answered = true;
    });
    await waitForCompleteTemp("", 4);
    // The wait does not pin the event loop: another call on the same session is answered meanwhile
    // (while the holder keeps the lock, so the edit cannot have ended: an answer at all is the fact).
    structured(await patient.call("list_workdirs"));
    // Answered after list_workdirs, which was sent later: the edit is still waiting, nothing published.
    expect(answered).toBe(false);
    expect(readFileSync(join(rw, "waits.txt"), "utf8")).toBe("one\n");
    await holder.release();
    structured(await pending);
    expect(readFileSync(join(rw, "waits.txt"), "utf8")).toBe("two\n");
  });

  test("a lock held longer than mutation_lock_wait_ms is WORKDIR_BUSY for every mutation, naming the cause; nothing changes", async () => {
    dir.file("rw/busy.txt", "orig\n");
    dir.file("rw/busy-doomed.txt", "d\n");
    dir.dir("rw/busy-dir");
    const revs = { file: await revision(a, "busy.txt"), doomed: await revision(a, "busy-doomed.txt"), dir: await revision(a, "busy-dir") };
    const before = readdirSync(rw).sort();
    const holder = await holdFlock(rw);
    try {
      const calls: [string, Record<string, unknown>][] = [
        ["create_text_file", { path: "busy-new.txt", content: "n" }],
        ["edit_text_file", { path: "busy.txt", expected_revision: revs.file, edits: [{ old_text: "orig", new_text: "x" }] }],
        ["delete_file", { path: "busy-doomed.txt", expected_revision: revs.doomed }],
        ["create_directory", { path: "busy-new-dir" }],
        ["delete_directory", { path: "busy-dir", expected_revision: revs.dir }],
        ["upload_binary_file", { path: "busy-new.bin", data_base64: "AAAA" }],
      ];
      for (const [tool, args] of calls) {
        const t0 = performance.now();
        const r = await a.call(tool, { workdir: "rw", ...args });
        expect(performance.now() - t0).toBeGreaterThanOrEqual(LOCK_WAIT_MS - 5);
        expect(errorCode(r)).toBe("WORKDIR_BUSY");
        expect((r.content[0] as { text: string }).text).toContain("another ServerFS process is writing");
      }
      // Reads never take the lock.
      expect(structured<{ content: string }>(await a.call("read_text_file", { workdir: "rw", path: "busy.txt" })).content).toBe("orig\n");
    } finally {
      await holder.release();
    }
    expect(readFileSync(join(rw, "busy.txt"), "utf8")).toBe("orig\n");
    expect(readdirSync(rw).sort()).toEqual(before);
  });
});

describe("content is never readable by others in flight", () => {
  test("an edit of a 0600 file writes its new content into an owner-only temp file; the result keeps 0600", async () => {
    const target = dir.file("rw/private.txt", "secret one\n");
    chmodSync(target, 0o600);
    const rev = await revision(a, "private.txt");
    const holder = await holdFlock(rw);
    const pending = patient.call("edit_text_file", {
      workdir: "rw",
      path: "private.txt",
      expected_revision: rev,
      edits: [{ old_text: "one", new_text: "two" }],
    });
    const temp = await waitForCompleteTemp("", "secret two\n".length);
    expect(statSync(temp).mode & 0o777).toBe(0o600);
    expect(statSync(temp).uid).toBe(statSync(target).uid);
    await holder.release();
    structured(await pending);
    expect(statSync(target).mode & 0o777).toBe(0o600);
    expect(readFileSync(target, "utf8")).toBe("secret two\n");
  });

  test("an overwriting upload of a 0640 file and a create are owner-only in flight and get their final mode at the publish", async () => {
    const target = dir.file("rw/group.bin", "old");
    chmodSync(target, 0o640);
    const rev = await revision(a, "group.bin");
    const payload = Buffer.alloc(4096, 7);
    let holder = await holdFlock(rw);
    const upload = patient.call("upload_binary_file", {
      workdir: "rw",
      path: "group.bin",
      data_base64: payload.toString("base64"),
      overwrite: true,
      expected_revision: rev,
    });
    expect(statSync(await waitForCompleteTemp("", payload.length)).mode & 0o777).toBe(0o600);
    await holder.release();
    structured(await upload);
    holder = await holdFlock(rw);
    const create = patient.call("create_text_file", { workdir: "rw", path: "fresh.txt", content: "x".repeat(5000) });
    expect(statSync(await waitForCompleteTemp("", 5000)).mode & 0o777).toBe(0o600);
    await holder.release();
    structured(await create);
    expect(statSync(target).mode & 0o777).toBe(0o640);
    expect(statSync(join(rw, "fresh.txt")).mode & 0o777).toBe(0o666 & ~process.umask());
  });
});

describe("temp files of a killed writer never accumulate", () => {
  /** Starts a mutation in a fresh server, kills it -9 once its temp file is complete, returns that file. */
  async function killWriterMidMutation(call: (s: McpSession) => Promise<unknown>, rel: string, size: number): Promise<string> {
    const victim = await startStdio(patientConfig);
    const holder = await holdFlock(rw);
    try {
      call(victim).catch(() => {});
      const temp = await waitForCompleteTemp(rel, size);
      process.kill(victim.pid!, "SIGKILL");
      await victim.close().catch(() => {});
      return temp;
    } finally {
      await holder.release();
    }
  }

  test("after kill -9 mid-upload the directory lists as empty and delete_directory removes it", async () => {
    dir.dir("rw/crash");
    const payload = Buffer.alloc(64 * 1024, 1).toString("base64");
    const temp = await killWriterMidMutation(
      (s) => s.call("upload_binary_file", { workdir: "rw", path: "crash/big.bin", data_base64: payload }),
      "crash",
      64 * 1024,
    );
    expect(readdirSync(join(rw, "crash"))).toEqual([temp.split("/").pop()!]);
    expect(structured<{ entries: unknown[] }>(await a.call("list_directory", { workdir: "rw", path: "crash" })).entries).toEqual([]);
    structured(await a.call("delete_directory", { workdir: "rw", path: "crash", expected_revision: await revision(a, "crash") }));
    expect(readdirSync(rw)).not.toContain("crash");
  });

  test("a create or create_directory in a directory holding a dead writer's temp file removes it first", async () => {
    dir.dir("rw/left");
    // Each writer cleans up after the one killed before it: kills never accumulate files.
    for (let i = 0; i < 3; i++) {
      await killWriterMidMutation((s) => s.call("create_text_file", { workdir: "rw", path: `left/f${i}.txt`, content: "y".repeat(3000) }), "left", 3000);
      expect(temps("left").length).toBe(1);
    }
    structured(await a.call("create_text_file", { workdir: "rw", path: "left/kept.txt", content: "k" }));
    expect(readdirSync(join(rw, "left"))).toEqual(["kept.txt"]);

    await killWriterMidMutation((s) => s.call("create_text_file", { workdir: "rw", path: "left/g.txt", content: "z".repeat(2000) }), "left", 2000);
    structured(await a.call("create_directory", { workdir: "rw", path: "left/sub" }));
    expect(readdirSync(join(rw, "left")).sort()).toEqual(["kept.txt", "sub"]);
  });

  test("a live writer's temp file is never removed by another process's cleanup", async () => {
    dir.dir("rw/live");
    const holder = await holdFlock(rw);
    try {
      const pending = patient.call("create_text_file", { workdir: "rw", path: "live/slow.txt", content: "s".repeat(1234) });
      const temp = await waitForCompleteTemp("live", 1234);
      // b cleans the directory before it waits for the lock, which it does not get in time.
      expect(errorCode(await b.call("create_directory", { workdir: "rw", path: "live/d" }))).toBe("WORKDIR_BUSY");
      expect(readdirSync(join(rw, "live"))).toEqual([temp.split("/").pop()!]);
      await holder.release();
      structured(await pending);
    } finally {
      await holder.release();
    }
    expect(readdirSync(join(rw, "live"))).toEqual(["slow.txt"]);
  });
});
