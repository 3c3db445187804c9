/**
 * The cross-process mutation lock of a workdir (docs/reliability.md, "Hardening: writes, temp
 * files, transfers and HTTP"): an exclusive `flock` on the workdir root's own directory handle,
 * held for exactly a mutation's last revision check and its publish. It exists in every
 * configuration (no file is created for it, nothing in `lock_dir`), so two `serverfs mcp`
 * processes with the Bridge disabled can no longer both commit against one revision.
 *
 * The wait never blocks the event loop: the lock is tried without blocking and retried with a
 * growing pause until `[limits] mutation_lock_wait_ms`, then the call answers WORKDIR_BUSY.
 */
import { ServerFsError } from "../../../shared/errors.ts";
import { tryLockExclusive, unlock } from "../../../shared/ffi/libc.ts";
import { closeQuietly, openRoot } from "../../../shared/fs/dir-handle.ts";

export type ReleaseWorkdirLock = () => void;

const FIRST_PAUSE_MS = 1;
const LONGEST_PAUSE_MS = 20;

/** Takes the lock of the workdir whose real root is `realRoot`; the caller releases it exactly once. */
export async function lockWorkdir(realRoot: string, waitMs: number, where: string): Promise<ReleaseWorkdirLock> {
  const fd = openRoot(realRoot, where, "mutation");
  const deadline = performance.now() + waitMs;
  let pause = FIRST_PAUSE_MS;
  try {
    for (;;) {
      const r = tryLockExclusive(fd);
      if (r === "locked") break;
      if (r === "error") throw new ServerFsError("MUTATION_IO_ERROR", `${where} the workdir's mutation lock could not be taken`);
      const left = deadline - performance.now();
      if (left <= 0) {
        throw new ServerFsError("WORKDIR_BUSY", `${where} the workdir is busy: another ServerFS process is writing in it; try again`);
      }
      await Bun.sleep(Math.min(pause, left));
      pause = Math.min(pause * 2, LONGEST_PAUSE_MS);
    }
  } catch (e) {
    closeQuietly(fd);
    throw e;
  }
  return () => {
    unlock(fd);
    closeQuietly(fd);
  };
}
