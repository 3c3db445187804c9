import { Database } from "bun:sqlite";
import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isServerFsError } from "../../src/shared/errors.ts";
import { Store } from "../../src/shared/store/index.ts";
import { openDatabase } from "../../src/shared/store/open.ts";
import { REPO_ROOT, type TempDir, tempDir } from "../helpers/workspace.ts";
import { insert, running } from "./store-fixtures.ts";

let dir: TempDir;
const opened: { close(): void }[] = [];
afterEach(() => {
  for (const c of opened.splice(0)) c.close();
  dir?.remove();
});

const fresh = () => {
  dir = tempDir("serverfs-store-open-");
  return join(dir.path, "state");
};
const open = (stateDir: string, migrate = true) => {
  const s = Store.open(stateDir, { migrate });
  opened.push(s);
  return s;
};
/** Creates the database and closes it again (SQLite then removes -wal and -shm). */
const initialize = (stateDir: string) => Store.open(stateDir, { migrate: true }).close();
const mode = (p: string) => statSync(p).mode & 0o7777;
const db = (stateDir: string) => join(stateDir, "state.sqlite3");

function expectUnsafe(fn: () => unknown): void {
  let caught: unknown;
  try {
    const r = fn();
    if (r && typeof r === "object" && "close" in r) opened.push(r as { close(): void });
  } catch (e) {
    caught = e;
  }
  expect(isServerFsError(caught) && caught.code).toBe("STATE_DIR_UNSAFE");
  expect(String((caught as Error).message)).not.toContain(dir.path);
}

const asRoot = process.getuid?.() === 0;

describe("files and modes", () => {
  test("a missing state_dir is created 0700; the database and its -wal / -shm files are 0600", () => {
    const stateDir = fresh();
    const store = open(stateDir);
    insert(store);
    expect(statSync(stateDir).isDirectory()).toBe(true);
    expect(mode(stateDir)).toBe(0o700);
    for (const suffix of ["", "-wal", "-shm"]) {
      expect(existsSync(db(stateDir) + suffix)).toBe(true);
      expect(mode(db(stateDir) + suffix)).toBe(0o600);
    }
  });

  test("an existing state_dir with group and other bits is set to 0700; a 0644 database to 0600", () => {
    const stateDir = fresh();
    initialize(stateDir);
    chmodSync(stateDir, 0o775);
    chmodSync(db(stateDir), 0o644);
    open(stateDir, false);
    expect(mode(stateDir)).toBe(0o700);
    expect(mode(db(stateDir))).toBe(0o600);
  });

  test("the file is in WAL mode, and a worker connection (no migration) sees the main thread's rows", () => {
    const stateDir = fresh();
    const main = open(stateDir);
    const id = insert(main);
    const worker = open(stateDir, false);
    expect(worker.getTask(id)?.status).toBe("queued");
    const probe = new Database(db(stateDir), { readonly: true });
    expect(probe.query<{ journal_mode: string }, []>("PRAGMA journal_mode").get()?.journal_mode).toBe("wal");
    probe.close();
  });

  test("every connection sets foreign_keys = ON, busy_timeout = 5000 and synchronous = FULL", () => {
    const stateDir = fresh();
    for (const migrate of [true, false]) {
      const conn = openDatabase(stateDir, { migrate }).db;
      opened.push(conn);
      expect(conn.query<{ foreign_keys: number }, []>("PRAGMA foreign_keys").get()?.foreign_keys).toBe(1);
      expect(conn.query<{ timeout: number }, []>("PRAGMA busy_timeout").get()?.timeout).toBe(5000);
      expect(conn.query<{ synchronous: number }, []>("PRAGMA synchronous").get()?.synchronous).toBe(2);
    }
  });
});

describe("STATE_DIR_UNSAFE", () => {
  test("state_dir that is a symlink to a directory", () => {
    const stateDir = fresh();
    const real = dir.dir("real");
    symlinkSync(real, stateDir);
    expectUnsafe(() => open(stateDir));
    expect(existsSync(join(real, "state.sqlite3"))).toBe(false);
  });

  test("state_dir that is a regular file", () => {
    const stateDir = fresh();
    writeFileSync(stateDir, "");
    expectUnsafe(() => open(stateDir));
  });

  test("a database that is a symlink; its target is never opened", () => {
    const stateDir = fresh();
    mkdirSync(stateDir, { mode: 0o700 });
    const target = dir.file("elsewhere.db", "not a database");
    symlinkSync(target, db(stateDir));
    expectUnsafe(() => open(stateDir));
    expect(readFileSync(target, "utf8")).toBe("not a database");
  });

  test.each(["-wal", "-shm"])("a %s file that is a symlink; its target is untouched", (suffix) => {
    const stateDir = fresh();
    initialize(stateDir);
    const target = dir.file("elsewhere", "keep");
    symlinkSync(target, db(stateDir) + suffix);
    expectUnsafe(() => open(stateDir));
    expect(readFileSync(target, "utf8")).toBe("keep");
  });

  test("a database that is a directory", () => {
    const stateDir = fresh();
    mkdirSync(db(stateDir), { recursive: true });
    expectUnsafe(() => open(stateDir));
  });

  test.skipIf(!asRoot)("a state_dir owned by another user", () => {
    const stateDir = fresh();
    mkdirSync(stateDir, { mode: 0o700 });
    chownSync(stateDir, 65534, 65534);
    expectUnsafe(() => open(stateDir));
  });

  test.skipIf(!asRoot)("a database owned by another user", () => {
    const stateDir = fresh();
    initialize(stateDir);
    chownSync(db(stateDir), 65534, 65534);
    expectUnsafe(() => open(stateDir));
  });
});

describe("one store module, a connection per thread", () => {
  test("a worker thread opens its own connection; its committed batch is visible to the main thread", async () => {
    const stateDir = fresh();
    const main = open(stateDir);
    const id = running(main);
    const script = dir.file(
      "append-worker.ts",
      `import { Store } from ${JSON.stringify(join(REPO_ROOT, "src/shared/store/index.ts"))};
self.onmessage = (e) => {
  const store = Store.open(e.data.stateDir);
  const r = store.appendEvents(e.data.id, [{ type: "agent.message", payload: { text: "from a worker" } }]);
  store.close();
  postMessage(r);
};`,
    );
    const worker = new Worker(script);
    try {
      const reply = new Promise<{ appended: number }>((resolve, reject) => {
        worker.onmessage = (e) => resolve(e.data);
        worker.onerror = (e) => reject(new Error(e.message));
        // inside the unit timeout, so this message is the one a stuck worker shows
        setTimeout(() => reject(new Error("worker did not answer")), 4_000);
      });
      worker.postMessage({ stateDir, id });
      expect((await reply).appended).toBe(1);
    } finally {
      worker.terminate();
    }
    expect(main.listEvents(id, 0, 10).map((e) => e.payload["text"])).toEqual(["from a worker"]);
  });
});
