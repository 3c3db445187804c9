/**
 * An agent's start directory as the Bridge verified it at submit, and the same directory again at
 * spawn (docs/reliability.md "The Bridge under faults"). A path can be swapped for a symlink at any
 * moment; a directory handle and a (device, inode) pair cannot. So the provider worker re-walks the
 * path without following a link, checks it reached the directory verified at submit, and spawns the
 * provider from that handle; the spawn then checks the leader's own `/proc/<pid>/cwd`.
 *
 * Offers: `VerifiedStartDir`, `identityOfFd(fd)`, `cwdIdentityOf(pid)`, `openVerifiedStartDir(dir)`.
 */
import { fstatSync, statSync } from "node:fs";
import { isServerFsError, ServerFsError } from "../errors.ts";
import { closeQuietly, openDirPath } from "./dir-handle.ts";

/** `"<dev>:<ino>"`: one comparable string, plain data that crosses a worker boundary. */
export type DirIdentity = string;

export interface VerifiedStartDir {
  /** The workdir's real root. */
  root: string;
  /** The start directory's segments under the root ([] for the root). */
  segments: string[];
  /** The identity of the handle checked at submit. */
  identity: DirIdentity;
}

const identity = (st: { dev: bigint; ino: bigint }): DirIdentity => `${st.dev}:${st.ino}`;

/** The identity of the directory `fd` holds open. */
export const identityOfFd = (fd: number): DirIdentity => identity(fstatSync(fd, { bigint: true }));

/** The identity of a process's working directory (the kernel's link, not a path), or null if unreadable. */
export function cwdIdentityOf(pid: number): DirIdentity | null {
  try {
    return identity(statSync(`/proc/${pid}/cwd`, { bigint: true }));
  } catch {
    return null;
  }
}

export const replaced = (): ServerFsError =>
  new ServerFsError("SYMLINK_NOT_ALLOWED", "the start directory was replaced after submission (links are not followed); the agent was not started");

/** What the walk may find where the verified directory was: a link, another object, nothing. */
const SWAPPED = new Set(["SYMLINK_NOT_ALLOWED", "NOT_A_DIRECTORY", "PATH_NOT_FOUND"]);

/**
 * Opens the start directory again without following any link and checks it is the one verified at
 * submit; the caller closes the handle. A link, another directory or none there is
 * SYMLINK_NOT_ALLOWED; any other failure (say, out of descriptors) is AGENT_RUNTIME_UNAVAILABLE.
 */
export function openVerifiedStartDir(dir: VerifiedStartDir): number {
  let fd: number;
  try {
    fd = openDirPath(dir.root, dir.segments, { where: "start directory", side: "read" });
  } catch (e) {
    if (isServerFsError(e) && SWAPPED.has(e.code)) throw replaced();
    throw new ServerFsError("AGENT_RUNTIME_UNAVAILABLE", "the agent runtime could not be started");
  }
  if (identityOfFd(fd) !== dir.identity) {
    closeQuietly(fd);
    throw replaced();
  }
  return fd;
}
