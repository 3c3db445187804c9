import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, existsSync, linkSync, lstatSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type RequestContext, type RpcServer, type RpcServerOptions, startRpcServer } from "../../src/main/bridge/rpc/server.ts";
import { BUN, type TempDir, tempDir } from "../helpers/workspace.ts";
import { exchange, heldUntilAbort, protocolHandlers, RawConnection, request } from "./rpc-wire.ts";

let dir: TempDir;
let n = 0;
const isRoot = process.getuid!() === 0;
const OTHER_ID = 54_321;

beforeAll(() => {
  dir = tempDir("serverfs-rpc-");
});
afterAll(() => dir.remove());

/** A fresh socket path in its own (not yet existing) directory. */
const freshPath = (...ancestors: string[]) => join(dir.path, `case${++n}`, ...ancestors, "bridge.sock");
const mode = (p: string) => lstatSync(p).mode & 0o777;

function start(socketPath: string, overrides: Partial<RpcServerOptions> = {}): Promise<RpcServer> {
  return startRpcServer({
    socketPath,
    peer: { uid: -1, gid: -1 },
    sharingGid: null,
    handlers: protocolHandlers({
      "task.get": async (p: { task_id: string }) => ({ task_id: p.task_id }),
      "task.events": async (_: unknown, ctx: RequestContext) => {
        await heldUntilAbort(ctx.signal, 8000);
        return { aborted: ctx.signal.aborted };
      },
    }),
    isClosing: () => false,
    ...overrides,
  });
}

async function startupCode(socketPath: string, overrides: Partial<RpcServerOptions> = {}): Promise<string | undefined> {
  try {
    const s = await start(socketPath, overrides);
    await s.close();
    return "started";
  } catch (e) {
    return (e as { code?: string }).code;
  }
}

const get = (socketPath: string) => exchange(socketPath, request("task.get", { task_id: "t" })).then((r) => r[0]!);

/** A socket file nobody listens on: what a crashed Bridge leaves behind. */
function staleSocket(socketPath: string): void {
  mkdirSync(join(socketPath, ".."), { recursive: true, mode: 0o700 });
  const r = Bun.spawnSync([BUN, "-e", `Bun.listen({ unix: ${JSON.stringify(socketPath)}, socket: { data() {} } }); process.kill(process.pid, "SIGKILL");`]);
  expect(r.signalCode).toBe("SIGKILL");
  expect(lstatSync(socketPath).isSocket()).toBe(true);
}

describe("startup hygiene", () => {
  test("missing ancestors are created 0700, the socket is 0600 in a 0700 directory", async () => {
    const p = freshPath("a", "b");
    const s = await start(p);
    try {
      expect(mode(join(p, "..", "..", ".."))).toBe(0o700);
      expect(mode(join(p, "..", ".."))).toBe(0o700);
      expect(mode(join(p, ".."))).toBe(0o700);
      expect(lstatSync(p).isSocket()).toBe(true);
      expect(mode(p)).toBe(0o600);
      expect((await get(p)).ok).toBe(true);
    } finally {
      await s.close();
    }
  });

  test("an existing safe directory is tightened to 0700", async () => {
    const p = freshPath();
    mkdirSync(join(p, ".."), { mode: 0o755 });
    chmodSync(join(p, ".."), 0o755);
    const s = await start(p);
    expect(mode(join(p, ".."))).toBe(0o700);
    await s.close();
  });

  test.skipIf(!isRoot)("with group sharing: directories 0750 and the socket 0660, group G", async () => {
    const p = freshPath("x");
    const s = await start(p, { sharingGid: OTHER_ID });
    try {
      for (const d of [join(p, ".."), join(p, "..", "..")]) {
        expect(mode(d)).toBe(0o750);
        expect(lstatSync(d).gid).toBe(OTHER_ID);
      }
      expect(mode(p)).toBe(0o660);
      expect(lstatSync(p).gid).toBe(OTHER_ID);
    } finally {
      await s.close();
    }
  });

  test.each(["777", "770", "702"])("a socket directory with mode %s is SOCKET_DIRECTORY_UNSAFE and left as it is", async (octal) => {
    const m = Number.parseInt(octal, 8);
    const p = freshPath();
    mkdirSync(join(p, ".."));
    chmodSync(join(p, ".."), m);
    expect(await startupCode(p)).toBe("SOCKET_DIRECTORY_UNSAFE");
    expect(mode(join(p, ".."))).toBe(m);
    expect(existsSync(p)).toBe(false);
  });

  test("an ancestor that is a regular file is SOCKET_DIRECTORY_UNSAFE", async () => {
    const file = dir.file(`file${++n}`, "x");
    expect(await startupCode(join(file, "run", "bridge.sock"))).toBe("SOCKET_DIRECTORY_UNSAFE");
  });

  test("a socket directory that is a symlink is SOCKET_DIRECTORY_UNSAFE", async () => {
    const real = dir.dir(`real${++n}`);
    chmodSync(real, 0o700);
    const link = join(dir.path, `link${n}`);
    symlinkSync(real, link);
    expect(await startupCode(join(link, "bridge.sock"))).toBe("SOCKET_DIRECTORY_UNSAFE");
  });

  test.skipIf(!isRoot)("a socket directory owned by another user is SOCKET_DIRECTORY_UNSAFE", async () => {
    const p = freshPath();
    mkdirSync(join(p, ".."), { mode: 0o700 });
    chownSync(join(p, ".."), OTHER_ID, OTHER_ID);
    expect(await startupCode(p)).toBe("SOCKET_DIRECTORY_UNSAFE");
  });

  test("a live Bridge at the path is SOCKET_PATH_IN_USE and keeps serving", async () => {
    const p = freshPath();
    const live = await start(p);
    try {
      expect(await startupCode(p)).toBe("SOCKET_PATH_IN_USE");
      expect((await get(p)).ok).toBe(true);
    } finally {
      await live.close();
    }
  });

  test("a regular file at the path is SOCKET_PATH_IN_USE and left untouched", async () => {
    const p = freshPath();
    mkdirSync(join(p, ".."), { mode: 0o700 });
    writeFileSync(p, "keep me");
    expect(await startupCode(p)).toBe("SOCKET_PATH_IN_USE");
    expect(readFileSync(p, "utf8")).toBe("keep me");
  });

  test("a symlink at the path is SOCKET_PATH_IN_USE and left untouched, even to a stale socket", async () => {
    const target = freshPath();
    staleSocket(target);
    const p = join(dir.path, `case${++n}`, "bridge.sock");
    mkdirSync(join(p, ".."), { mode: 0o700 });
    symlinkSync(target, p);
    expect(await startupCode(p)).toBe("SOCKET_PATH_IN_USE");
    expect(lstatSync(p).isSymbolicLink()).toBe(true);
    expect(lstatSync(target).isSocket()).toBe(true);
  });

  test.skipIf(!isRoot)("a socket owned by another user is SOCKET_PATH_IN_USE and left untouched", async () => {
    const p = freshPath();
    staleSocket(p);
    chownSync(p, OTHER_ID, OTHER_ID);
    expect(await startupCode(p)).toBe("SOCKET_PATH_IN_USE");
    expect(lstatSync(p).uid).toBe(OTHER_ID);
  });

  test("a stale own socket (connect refused) is replaced", async () => {
    const p = freshPath();
    staleSocket(p);
    // a second name keeps the stale inode alive, so its number cannot be reused by the new socket
    linkSync(p, `${p}.stale`);
    const before = lstatSync(p).ino;
    const s = await start(p);
    try {
      expect(lstatSync(p).ino).not.toBe(before);
      expect((await get(p)).ok).toBe(true);
    } finally {
      await s.close();
    }
  });

  test("close unlinks the socket, but only while the path still names the bound inode", async () => {
    const p = freshPath();
    const s = await start(p);
    await s.close();
    expect(existsSync(p)).toBe(false);

    const q = freshPath();
    const t = await start(q);
    renameSync(q, `${q}.moved`);
    writeFileSync(q, "someone else's");
    await t.close();
    expect(readFileSync(q, "utf8")).toBe("someone else's");
  });
});

describe("peer check", () => {
  test("the Bridge's own uid and gid, by -1 or by number, are served", async () => {
    const p = freshPath();
    const s = await start(p, { peer: { uid: process.getuid!(), gid: process.getgid!() } });
    expect((await get(p)).ok).toBe(true);
    await s.close();
  });

  test.each([
    ["uid", { uid: process.getuid!() + 1, gid: -1 }],
    ["gid", { uid: -1, gid: process.getgid!() + 1 }],
  ])("a peer whose %s differs gets one PEER_NOT_AUTHORIZED line with request_id null, then the close", async (_, peer) => {
    const p = freshPath();
    const s = await start(p, { peer });
    try {
      const conn = await RawConnection.open(p);
      conn.send(`${request("task.get", { task_id: "t" })}\n`);
      expect(await conn.next()).toEqual({ request_id: null, ok: false, error: { code: "PEER_NOT_AUTHORIZED", message: expect.any(String) } });
      expect(await conn.nextLine()).toBeNull();
      expect(await conn.closedWithin(5000)).toBe(true);
    } finally {
      await s.close();
    }
  });
});

describe("shutdown step 1", () => {
  test("close aborts in-flight long polls, answers open connections BRIDGE_CLOSED and accepts no one new", async () => {
    const p = freshPath();
    const s = await start(p);
    const polling = await RawConnection.open(p);
    const idle = await RawConnection.open(p);
    const POLL_WAIT_MS = 8000;
    polling.send(`${request("task.events", { task_id: "t", wait_ms: POLL_WAIT_MS }, "poll")}\n`);
    // a moment for the poll to reach its handler: an in-flight poll is the case under test
    await Bun.sleep(100);
    const started = Date.now();
    await s.close();
    // the close answered the poll (aborted), long before its own wait would have
    expect(await polling.next()).toEqual({ request_id: "poll", ok: true, result: { aborted: true } });
    expect(Date.now() - started).toBeLessThan(POLL_WAIT_MS / 2);
    idle.send(`${request("task.get", { task_id: "t" }, "after")}\n`);
    expect(await idle.next()).toMatchObject({ request_id: "after", error: { code: "BRIDGE_CLOSED" } });
    await expect(RawConnection.open(p)).rejects.toThrow();
    polling.close();
    idle.close();
  });

  test("a method of the protocol without a handler in this server is METHOD_NOT_FOUND", async () => {
    const p = freshPath();
    const s = await start(p);
    expect((await exchange(p, request("recovery.list", {})))[0]?.error?.code).toBe("METHOD_NOT_FOUND");
    await s.close();
  });
});
