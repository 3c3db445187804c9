/**
 * The socket's startup hygiene, docs/bridge-rpc.md#socket-hygiene 1–5. Offers:
 * - `prepareSocketPath`: steps 1–3 (ancestors, the parent's safety and mode, whatever is already at
 *   the path: refused, live, or a stale own socket that is removed);
 * - `bindSocket`: step 4, returning the listener and the bound inode;
 * - `unlinkIfBound`: step 5.
 *
 * Why the bind goes through a temporary name: Bun's listener unlinks its bind path by name when it
 * stops, which would remove whatever entry sits at the path by then. So the socket is bound under a
 * random name in the same private directory, given its final mode there, then hard-linked to the
 * socket path (link never replaces an existing entry) and the temporary name removed. Bun later
 * unlinks only the long-gone temporary name; the socket path is unlinked here, same inode only.
 */
import { randomBytes } from "node:crypto";
import { chmodSync, chownSync, closeSync, constants, fchmodSync, fchownSync, linkSync, lstatSync, mkdirSync, openSync, type Stats, unlinkSync } from "node:fs";
import { createConnection } from "node:net";
import { dirname, join } from "node:path";
import type { SocketHandler, UnixSocketListener } from "bun";
import { ServerFsError } from "../../../shared/errors.ts";
import { dirMode, othersMayWrite, ownUid, socketMode } from "../../../shared/fs/modes.ts";

/** The stale-socket connect probe (docs/bridge-rpc.md#limits). */
const PROBE_TIMEOUT_MS = 500;
const MAX_SOCKET_PATH_BYTES = 107;

export interface BoundInode {
  dev: number;
  ino: number;
}

const unsafeDir = (phrase: string) => new ServerFsError("SOCKET_DIRECTORY_UNSAFE", phrase);
const inUse = (phrase: string) => new ServerFsError("SOCKET_PATH_IN_USE", phrase);

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw e;
  }
}

/** Step 1: missing ancestors, outermost first, each with exactly the directory mode (umask aside). */
function createAncestors(dir: string, sharingGid: number | null): void {
  const missing: string[] = [];
  for (let p = dir; lstatOrNull(p) === null; p = dirname(p)) missing.unshift(p);
  for (const p of missing) {
    try {
      mkdirSync(p, { mode: dirMode(sharingGid) });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "EEXIST") continue; // raced; step 2 judges the parent
      throw unsafeDir("the socket directory cannot be created");
    }
    secureDir(p, sharingGid);
  }
}

/** chmod (and chgrp with sharing) through a no-follow descriptor, so a swapped-in symlink is refused. */
function secureDir(path: string, sharingGid: number | null): void {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch {
    throw unsafeDir("the socket directory is not a real directory");
  }
  try {
    fchmodSync(fd, dirMode(sharingGid));
    if (sharingGid !== null) fchownSync(fd, ownUid(), sharingGid);
  } catch {
    throw unsafeDir("the socket directory's mode cannot be set");
  } finally {
    closeSync(fd);
  }
}

/** Step 2. */
function checkParent(dir: string, sharingGid: number | null): void {
  const st = lstatOrNull(dir);
  if (st === null || !st.isDirectory()) throw unsafeDir("the socket directory is not a real directory");
  if (st.uid !== ownUid()) throw unsafeDir("the socket directory is owned by another user");
  if (othersMayWrite(st.mode)) throw unsafeDir("the socket directory is writable by group or others");
  secureDir(dir, sharingGid);
}

type Probe = "live" | "stale" | "unknown";

/** Connects once: success or timeout means a live Bridge; ECONNREFUSED or ENOENT a stale socket. */
function probe(socketPath: string): Promise<Probe> {
  return new Promise((resolve) => {
    const socket = createConnection({ path: socketPath });
    const done = (verdict: Probe) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(verdict);
    };
    const timer = setTimeout(() => done("live"), PROBE_TIMEOUT_MS);
    socket.once("connect", () => done("live"));
    socket.once("error", (e: NodeJS.ErrnoException) => done(e.code === "ECONNREFUSED" || e.code === "ENOENT" ? "stale" : "unknown"));
  });
}

const sameEntry = (a: Stats, b: Stats) => a.dev === b.dev && a.ino === b.ino && a.uid === b.uid;

/** Step 3. */
async function clearSocketPath(socketPath: string): Promise<void> {
  const st = lstatOrNull(socketPath);
  if (st === null) return;
  if (!st.isSocket() || st.uid !== ownUid()) throw inUse("something other than a Bridge socket is at the socket path");
  const verdict = await probe(socketPath);
  if (verdict === "live") throw inUse("another Bridge is listening on the socket");
  if (verdict === "unknown") throw inUse("the socket at the socket path cannot be probed");
  const again = lstatOrNull(socketPath);
  if (again === null) return;
  if (!sameEntry(st, again)) throw inUse("the socket path changed while it was probed");
  try {
    unlinkSync(socketPath);
  } catch {
    throw inUse("the stale socket cannot be removed");
  }
}

/** Steps 1–3, before binding. */
export async function prepareSocketPath(socketPath: string, sharingGid: number | null): Promise<void> {
  const dir = dirname(socketPath);
  try {
    createAncestors(dir, sharingGid);
    checkParent(dir, sharingGid);
    await clearSocketPath(socketPath);
  } catch (e) {
    // an lstat that fails for another reason than ENOENT (EACCES, ENOTDIR): never a raw OS message
    throw e instanceof ServerFsError ? e : unsafeDir("the socket directory cannot be inspected");
  }
}

/** A random name in the socket's directory whose full path still fits a `sun_path`. */
function temporaryPath(socketPath: string): string {
  const dir = dirname(socketPath);
  const budget = MAX_SOCKET_PATH_BYTES - Buffer.byteLength(dir) - 1;
  const name = `~${randomBytes(8).toString("hex")}`.slice(0, Math.max(1, Math.min(budget, 17)));
  return join(dir, name);
}

export interface Bound<Data> {
  listener: UnixSocketListener<Data>;
  inode: BoundInode;
}

/** Step 4: bind, set 0600 (sharing: 0660 and group G), then publish at the socket path. */
export function bindSocket<Data>(socketPath: string, sharingGid: number | null, handler: SocketHandler<Data>): Bound<Data> {
  const temp = temporaryPath(socketPath);
  let listener: UnixSocketListener<Data>;
  try {
    listener = Bun.listen<Data>({ unix: temp, socket: handler, allowHalfOpen: true });
  } catch {
    throw inUse("the socket cannot be bound");
  }
  try {
    // group first, so the group bits never apply to any group but G
    if (sharingGid !== null) chownSync(temp, ownUid(), sharingGid);
    chmodSync(temp, socketMode(sharingGid));
    const st = lstatSync(temp);
    if (!st.isSocket() || st.uid !== ownUid()) throw inUse("the socket cannot be bound");
    try {
      linkSync(temp, socketPath);
    } catch {
      throw inUse("something appeared at the socket path");
    }
    return { listener, inode: { dev: st.dev, ino: st.ino } };
  } catch (e) {
    listener.stop(true);
    throw e instanceof ServerFsError ? e : inUse("the socket cannot be bound");
  } finally {
    try {
      unlinkSync(temp);
    } catch {
      // already gone (the failure path's stop() removed it)
    }
  }
}

/** Step 5: unlink the socket path only while it still names the inode this Bridge bound. */
export function unlinkIfBound(socketPath: string, inode: BoundInode): void {
  try {
    const st = lstatOrNull(socketPath);
    if (st !== null && st.dev === inode.dev && st.ino === inode.ino) unlinkSync(socketPath);
  } catch {
    // shutdown goes on; the next startup finds a stale socket and replaces it
  }
}
