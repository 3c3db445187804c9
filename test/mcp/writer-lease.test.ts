import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FlockHolder, holdFlock, releaseAllFlocks } from "../helpers/flock-holder.ts";
import { errorCode, type McpSession, structured } from "../helpers/mcp-client.ts";
import { startInProcess } from "../helpers/mcp-in-process.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

let dir: TempDir;
let mcp: McpSession;
let locks: string;

/** Slot → alias of the workdirs below; each slot's lock_dir entries are prepared differently. */
const WORKDIRS = [
  { slot: 1, alias: "w1" }, // a normal lock file
  { slot: 2, alias: "w2" }, // a normal lock file; guard tests
  { slot: 3, alias: "w3" }, // no lock file
  { slot: 4, alias: "w4" }, // the lock file is a symlink
  { slot: 5, alias: "w5" }, // the guard is a directory
  { slot: 6, alias: "w6" }, // the lock file is a FIFO
  { slot: 7, alias: "w7" }, // the lock file is a directory
  { slot: 10, alias: "w10" }, // a two-digit slot
];

const lockFile = (slot: number) => join(locks, `${String(slot).padStart(2, "0")}.lock`);
const guardFile = (slot: number) => join(locks, "active", String(slot).padStart(2, "0"));

/** A separate real process that takes the slot's flock, the way the Bridge does, and keeps it. */
const holdLock = (slot: number): Promise<FlockHolder> => holdFlock(lockFile(slot));

const revision = async (alias: string, path: string) => structured<{ revision: string }>(await mcp.call("stat_file", { workdir: alias, path })).revision;

/** One call of each mutation tool against `alias`, with valid arguments for existing targets. */
async function everyMutation(session: McpSession, alias: string): Promise<(string | null)[]> {
  const fileRev = await revision(alias, "file.txt");
  const doomedRev = await revision(alias, "doomed.txt");
  const dirRev = await revision(alias, "empty-dir");
  return [
    errorCode(await session.call("create_text_file", { workdir: alias, path: "new.txt", content: "n" })),
    errorCode(
      await session.call("edit_text_file", { workdir: alias, path: "file.txt", expected_revision: fileRev, edits: [{ old_text: "orig", new_text: "x" }] }),
    ),
    errorCode(await session.call("delete_file", { workdir: alias, path: "doomed.txt", expected_revision: doomedRev })),
    errorCode(await session.call("create_directory", { workdir: alias, path: "new-dir" })),
    errorCode(await session.call("delete_directory", { workdir: alias, path: "empty-dir", expected_revision: dirRev })),
    errorCode(await session.call("upload_binary_file", { workdir: alias, path: "new.bin", data_base64: "AAAA" })),
  ];
}

/** Names, types, modes, sizes and mtimes of everything in lock_dir. */
function snapshot(root: string): string[] {
  return readdirSync(root, { recursive: true, encoding: "utf8" })
    .sort()
    .map((name) => {
      const st = lstatSync(join(root, name));
      return `${name} ${st.mode.toString(8)} ${st.size} ${st.mtimeMs}`;
    });
}

/** Resets the workdir to one file and one empty directory. */
function prepareWorkdir(alias: string): void {
  const root = dir.dir(alias);
  for (const name of readdirSync(root)) rmSync(join(root, name), { recursive: true, force: true });
  dir.file(`${alias}/file.txt`, "orig\n");
  dir.file(`${alias}/doomed.txt`, "doomed\n");
  dir.dir(`${alias}/empty-dir`);
}

beforeAll(async () => {
  dir = tempDir();
  locks = dir.dir("locks");
  chmodSync(locks, 0o700);
  mkdirSync(join(locks, "active"), { mode: 0o700 });
  for (const slot of [1, 2, 5, 10]) writeFileSync(lockFile(slot), "", { mode: 0o600 });
  writeFileSync(join(locks, "elsewhere.lock"), "", { mode: 0o600 });
  symlinkSync("elsewhere.lock", lockFile(4));
  expect(Bun.spawnSync(["mkfifo", lockFile(6)]).exitCode).toBe(0);
  mkdirSync(lockFile(7));
  mkdirSync(guardFile(5));
  for (const { alias } of WORKDIRS) prepareWorkdir(alias);
  const config = writeConfig(dir.path, {
    // The Bridge's own view of lock_dir does not exist here: the MCP role must use mcp_lock_dir.
    bridge: { enabled: true, lock_dir: join(dir.path, "bridge-view-of-locks"), mcp_lock_dir: locks },
    workdirs: WORKDIRS.map(({ slot, alias }) => ({ slot, alias, path: join(dir.path, alias), read_only: false, binary_transfer_enabled: true })),
  });
  mcp = await startInProcess(config);
});
afterEach(() => {
  rmSync(guardFile(2), { force: true });
});
afterAll(async () => {
  releaseAllFlocks();
  await mcp.close();
  dir.remove();
});

describe("writer lease", () => {
  test("with the lock free and no guard every mutation succeeds, and lock_dir (seen through mcp_lock_dir) is left exactly as it was", async () => {
    const before = snapshot(locks);
    expect(await everyMutation(mcp, "w1")).toEqual([null, null, null, null, null, null]);
    expect(snapshot(locks)).toEqual(before);
    prepareWorkdir("w1");
  });

  test("a lock held by another process is WORKDIR_BUSY for every mutation tool, and nothing changes", async () => {
    const holder = await holdLock(1);
    try {
      expect(await everyMutation(mcp, "w1")).toEqual(Array(6).fill("WORKDIR_BUSY"));
      expect(readFileSync(join(dir.path, "w1/file.txt"), "utf8")).toBe("orig\n");
      expect(readdirSync(join(dir.path, "w1")).sort()).toEqual(["doomed.txt", "empty-dir", "file.txt"]);
    } finally {
      await holder.release();
    }
    const rev = await revision("w1", "file.txt");
    const r = await mcp.call("edit_text_file", { workdir: "w1", path: "file.txt", expected_revision: rev, edits: [{ old_text: "orig", new_text: "free" }] });
    expect(structured(r)["edited"]).toBe(true);
    prepareWorkdir("w1");
  });

  test("argument checks come before the lease and the filesystem phase after it", async () => {
    const holder = await holdLock(1);
    try {
      const nul = await mcp.call("create_text_file", { workdir: "w1", path: "missing/x.txt", content: "\0" });
      expect(errorCode(nul)).toBe("BINARY_CONTENT_NOT_ALLOWED");
      expect(errorCode(await mcp.call("create_text_file", { workdir: "w1", path: "missing/x.txt", content: "x" }))).toBe("WORKDIR_BUSY");
      const upload = await mcp.call("upload_binary_file", { workdir: "w1", path: "x.bin", data_base64: "AAAA", overwrite: true });
      expect(errorCode(upload)).toBe("EXPECTED_REVISION_REQUIRED");
    } finally {
      await holder.release();
    }
  });

  test("reads never take the lease: they work while the lock is held and where the lock file is missing", async () => {
    const holder = await holdLock(1);
    try {
      for (const alias of ["w1", "w3"]) {
        structured(await mcp.call("stat_file", { workdir: alias, path: "file.txt" }));
        structured(await mcp.call("read_text_file", { workdir: alias, path: "file.txt" }));
        structured(await mcp.call("list_directory", { workdir: alias, path: "" }));
        structured(await mcp.call("download_binary_file", { workdir: alias, path: "file.txt" }));
      }
    } finally {
      await holder.release();
    }
  });

  test("a free lock with a regular file at active/NN is WORKDIR_RECOVERY_REQUIRED, and nothing changes", async () => {
    writeFileSync(guardFile(2), "{}");
    expect(await everyMutation(mcp, "w2")).toEqual(Array(6).fill("WORKDIR_RECOVERY_REQUIRED"));
    expect(readFileSync(join(dir.path, "w2/file.txt"), "utf8")).toBe("orig\n");
    expect(readFileSync(guardFile(2), "utf8")).toBe("{}");
  });

  test("a held lock wins over a leftover guard: WORKDIR_BUSY", async () => {
    writeFileSync(guardFile(2), "{}");
    const holder = await holdLock(2);
    try {
      expect(errorCode(await mcp.call("create_directory", { workdir: "w2", path: "d" }))).toBe("WORKDIR_BUSY");
    } finally {
      await holder.release();
    }
    expect(errorCode(await mcp.call("create_directory", { workdir: "w2", path: "d" }))).toBe("WORKDIR_RECOVERY_REQUIRED");
  });

  test("a missing active/ directory counts as no guard", async () => {
    renameSync(join(locks, "active"), join(locks, "active-away"));
    try {
      structured(await mcp.call("create_directory", { workdir: "w1", path: "no-active" }));
    } finally {
      renameSync(join(locks, "active-away"), join(locks, "active"));
    }
  });

  test("AGENT_LOCK_UNAVAILABLE: a missing lock file, a symlink, a FIFO (without blocking), a directory, or a guard that is no regular file", async () => {
    for (const alias of ["w3", "w4", "w6", "w7", "w5"]) {
      const r = await mcp.call("create_directory", { workdir: alias, path: "d" });
      expect(errorCode(r)).toBe("AGENT_LOCK_UNAVAILABLE");
    }
    expect(lstatSync(join(locks, "elsewhere.lock")).size).toBe(0);
    for (const alias of ["w3", "w4", "w5", "w6", "w7"]) expect(readdirSync(join(dir.path, alias)).sort()).toEqual(["doomed.txt", "empty-dir", "file.txt"]);
  });

  test("the lock file is named by the two-digit slot", async () => {
    const holder = await holdLock(10);
    try {
      expect(errorCode(await mcp.call("create_directory", { workdir: "w10", path: "d" }))).toBe("WORKDIR_BUSY");
      structured(await mcp.call("create_directory", { workdir: "w1", path: "slot-1-is-free" }));
    } finally {
      await holder.release();
    }
    structured(await mcp.call("create_directory", { workdir: "w10", path: "d" }));
  });

  test("concurrent mutations of one process wait their turn instead of reporting WORKDIR_BUSY to each other", async () => {
    const calls = Array.from({ length: 12 }, (_, i) =>
      mcp.call("create_text_file", { workdir: i % 2 === 0 ? "w1" : "w2", path: `concurrent-${i}.txt`, content: `${i}` }),
    );
    const results = await Promise.all(calls);
    expect(results.map(errorCode)).toEqual(Array(12).fill(null));
  });

  test("lease error messages never reveal the lock directory", async () => {
    const holder = await holdLock(1);
    try {
      const texts = [await mcp.call("create_directory", { workdir: "w1", path: "d" }), await mcp.call("create_directory", { workdir: "w3", path: "d" })].map(
        (r) => (r.content[0] as { text: string }).text,
      );
      for (const text of texts) {
        expect(text).not.toContain(locks);
        expect(text).not.toContain(dir.path);
      }
    } finally {
      await holder.release();
    }
  });
});

describe("without the Bridge", () => {
  test("there is no lease at all: a held lock and a leftover guard do not matter, and lock_dir need not exist", async () => {
    const sameLocks = writeConfig(
      dir.path,
      { bridge: { enabled: false, lock_dir: locks }, workdirs: [{ slot: 1, alias: "w1", path: join(dir.path, "w1"), read_only: false }] },
      "no-bridge.toml",
    );
    const noLocks = writeConfig(
      dir.path,
      {
        bridge: { enabled: false, lock_dir: join(dir.path, "does-not-exist") },
        workdirs: [{ slot: 3, alias: "w3", path: join(dir.path, "w3"), read_only: false }],
      },
      "no-lock-dir.toml",
    );
    writeFileSync(guardFile(1), "{}");
    const holder = await holdLock(1);
    const a = await startInProcess(sameLocks);
    const b = await startInProcess(noLocks);
    try {
      structured(await a.call("create_directory", { workdir: "w1", path: "without-bridge" }));
      structured(await b.call("create_directory", { workdir: "w3", path: "without-lock-dir" }));
    } finally {
      await a.close();
      await b.close();
      await holder.release();
      rmSync(guardFile(1), { force: true });
    }
  });
});
