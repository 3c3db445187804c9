/**
 * One Bridge per state directory (docs/task-model.md#threads): an exclusive non-blocking `flock` on
 * `state_dir/bridge.lock`, held for the process's lifetime and dropped by the kernel if it dies.
 * Whoever holds it is the guard files' one writer (docs/reliability.md#operator-override).
 */
import { closeSync, constants, fchmodSync, fstatSync, openSync } from "node:fs";
import { join } from "node:path";
import { ServerFsError } from "../../shared/errors.ts";
import { tryLockExclusive, unlock } from "../../shared/ffi/libc.ts";
import { O_CLOEXEC } from "../../shared/fs/dir-handle.ts";
import { PRIVATE_FILE } from "../../shared/fs/modes.ts";

export interface InstanceLock {
  /** When this instance took the lock (leftover temp files older than this are a crash's). */
  readonly acquiredAtMs: number;
  release(): void;
}

export function acquireInstanceLock(stateDir: string): InstanceLock {
  let fd: number;
  try {
    fd = openSync(join(stateDir, "bridge.lock"), constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW | O_CLOEXEC, PRIVATE_FILE);
  } catch {
    throw new ServerFsError("STATE_DIR_UNSAFE", "the instance lock file cannot be opened");
  }
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    throw new ServerFsError("STATE_DIR_UNSAFE", "the instance lock is not a regular file");
  }
  fchmodSync(fd, PRIVATE_FILE);
  const r = tryLockExclusive(fd);
  if (r !== "locked") {
    closeSync(fd);
    if (r === "busy") throw new ServerFsError("BRIDGE_ALREADY_RUNNING", "another Bridge is using this state directory");
    throw new ServerFsError("STATE_DIR_UNSAFE", "the instance lock cannot be taken");
  }
  let released = false;
  return {
    acquiredAtMs: Date.now(),
    release() {
      if (released) return;
      released = true;
      unlock(fd);
      closeSync(fd);
    },
  };
}
