/**
 * One Bridge per state directory and per lock directory (docs/task-model.md#threads,
 * docs/reliability.md#one-bridge-per-state-and-lock-directory): an exclusive non-blocking `flock` on
 * `state_dir/bridge.lock`, and then on `lock_dir/bridge.lock`, each held for the process's lifetime
 * and dropped by the kernel if it dies. Whoever holds both is the guard files' one writer
 * (docs/reliability.md#operator-override): two Bridges with separate state directories on one lock
 * directory would each read the other's live guards as orphans.
 *
 * Each lock file records its holder once the lock is taken (`{"pid": N}`, and the state directory in
 * the lock directory's), so a refused start names the running Bridge. Both files are 0600 whatever the
 * group sharing: the MCP role never opens them, and a state directory is the operator's own path.
 */
import { closeSync, constants, fchmodSync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { ServerFsError } from "../../shared/errors.ts";
import { tryLockExclusive, unlock } from "../../shared/ffi/libc.ts";
import { O_CLOEXEC } from "../../shared/fs/dir-handle.ts";
import { PRIVATE_FILE } from "../../shared/fs/modes.ts";

export const LOCK_FILE = "bridge.lock";

export interface InstanceLock {
  /** When this instance took the lock (leftover temp files older than this are a crash's). */
  readonly acquiredAtMs: number;
  release(): void;
}

const HolderSchema = v.object({ pid: v.pipe(v.number(), v.safeInteger()), state_dir: v.optional(v.string()) });
type Holder = v.InferOutput<typeof HolderSchema>;

/** What a lock file says of its holder; null when it says nothing readable (a holder that is just starting). */
function readHolder(fd: number): Holder | null {
  const buf = Buffer.alloc(8192);
  try {
    const n = readSync(fd, buf, 0, buf.length, 0);
    const parsed = v.safeParse(HolderSchema, JSON.parse(buf.subarray(0, n).toString("utf8")));
    return parsed.success ? parsed.output : null;
  } catch {
    return null;
  }
}

function writeHolder(fd: number, holder: Holder): void {
  const text = Buffer.from(`${JSON.stringify(holder)}\n`);
  ftruncateSync(fd, 0);
  writeSync(fd, text, 0, text.length, 0);
}

interface LockKind {
  /** The error when the file cannot be opened or locked. */
  unsafe: (phrase: string) => ServerFsError;
  /** The refusal, naming the holder when its record could be read. */
  busy: (holder: Holder | null) => ServerFsError;
}

function holdLock(path: string, kind: LockKind, holder: Holder): InstanceLock {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW | O_CLOEXEC, PRIVATE_FILE);
  } catch {
    throw kind.unsafe("cannot be opened");
  }
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    throw kind.unsafe("is not a regular file");
  }
  try {
    fchmodSync(fd, PRIVATE_FILE);
    const r = tryLockExclusive(fd);
    if (r === "busy") throw kind.busy(readHolder(fd));
    if (r !== "locked") throw kind.unsafe("cannot be taken");
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  try {
    writeHolder(fd, holder);
  } catch {
    // the lock is what excludes; a record that could not be written only makes a refusal less specific
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

const pidOf = (holder: Holder | null) => (holder === null ? "" : ` (pid ${holder.pid})`);

/** `state_dir/bridge.lock`: held → BRIDGE_ALREADY_RUNNING naming the holder's pid. */
export function acquireInstanceLock(stateDir: string): InstanceLock {
  return holdLock(
    join(stateDir, LOCK_FILE),
    {
      unsafe: (phrase) => new ServerFsError("STATE_DIR_UNSAFE", `the instance lock ${phrase}`),
      busy: (holder) => new ServerFsError("BRIDGE_ALREADY_RUNNING", `another Bridge${pidOf(holder)} is using this state directory`),
    },
    { pid: process.pid },
  );
}

/**
 * `lock_dir/bridge.lock`, taken once the lock directory is prepared and before any guard is read:
 * held → BRIDGE_ALREADY_RUNNING naming the holder's pid and state directory. The message goes to the
 * refused Bridge's (or command's) stderr only, the operator's own terminal or journal.
 */
export function acquireLockDirLock(lockDir: string, stateDir: string): InstanceLock {
  return holdLock(
    join(lockDir, LOCK_FILE),
    {
      unsafe: (phrase) => new ServerFsError("LOCK_PATH_UNSAFE", `the lock directory's ${LOCK_FILE} ${phrase}`),
      busy: (holder) =>
        new ServerFsError(
          "BRIDGE_ALREADY_RUNNING",
          `another Bridge${pidOf(holder)}${holder?.state_dir === undefined ? "" : ` with state directory ${holder.state_dir}`} is using this lock directory; give each Bridge its own lock_dir`,
        ),
    },
    { pid: process.pid, state_dir: stateDir },
  );
}
