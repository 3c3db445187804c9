/**
 * A separate real process that takes an exclusive `flock` on a file or directory and keeps it, the
 * way the Bridge holds a slot's lock or another ServerFS process holds a workdir's.
 */
import { expect } from "bun:test";
import { join } from "node:path";
import { BUN, REPO_ROOT } from "./workspace.ts";

const LIBC = join(REPO_ROOT, "src/shared/ffi/libc.ts");

export interface FlockHolder {
  release(): Promise<void>;
}

const live = new Set<Bun.Subprocess>();

/** Resolves once the holder process has the lock (a read-only descriptor suffices for flock). */
export async function holdFlock(path: string): Promise<FlockHolder> {
  const script = `
    import { openSync, constants } from "node:fs";
    import { tryLockExclusive } from ${JSON.stringify(LIBC)};
    const fd = openSync(process.env.LOCK_TARGET, constants.O_RDONLY);
    console.log(tryLockExclusive(fd));
    setInterval(() => {}, 1 << 30);
  `;
  const proc = Bun.spawn([BUN, "-e", script], { env: { ...process.env, LOCK_TARGET: path }, stdout: "pipe", stderr: "ignore" });
  live.add(proc);
  const reader = proc.stdout.getReader();
  let out = "";
  const deadline = Date.now() + 10_000;
  while (!out.includes("\n")) {
    const next = await Promise.race([reader.read(), Bun.sleep(Math.max(0, deadline - Date.now())).then(() => null)]);
    if (next === null || next.done) break;
    out += new TextDecoder().decode(next.value);
  }
  reader.releaseLock();
  expect(out.trim()).toBe("locked");
  return {
    async release() {
      proc.kill();
      await proc.exited;
      live.delete(proc);
    },
  };
}

/** Ends every holder still alive (for afterAll). */
export function releaseAllFlocks(): void {
  for (const proc of live) proc.kill();
  live.clear();
}
