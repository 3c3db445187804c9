/**
 * A walk stuck in the kernel (docs/reliability.md, "Hardening: the event loop, reads and memory"):
 * a subdirectory of the workdir is a real FUSE mount that never answers (test/helpers/hung-mount.ts),
 * so a search that reaches it blocks its walk-pool worker in a `stat` no stop flag can interrupt.
 * The call still answers SEARCH_TIMEOUT at its deadline, the stuck worker is replaced so the next
 * search is served (with `search_workers = 1` only a replacement can serve it), the pool's threads
 * stay bounded however many calls the mount catches, and once the mount is gone the stuck worker is
 * terminated: threads and descriptors come back to the baseline. Skipped where no test can mount
 * (not root, or no /dev/fuse).
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { type HungMount, hangMount, hungMountAvailable } from "../helpers/hung-mount.ts";
import { errorCode, type McpSession, startStdio, structured } from "../helpers/mcp-client.ts";
import { holdsWithin, poll } from "../helpers/poll.ts";
import { openFds, workerThreads } from "../helpers/proc-counts.ts";
import { closeWhileBusy, startRaw } from "../helpers/raw-stdio.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

const available = hungMountAvailable();

let dir: TempDir;
let config: string;
let hung: string;
let mount: HungMount | undefined;

beforeAll(() => {
  if (!available) return;
  dir = tempDir();
  dir.file("ws/ok/a.txt", "hello\n");
  hung = dir.dir("ws/hung");
  config = writeConfig(dir.path, {
    limits: { search_workers: 1, search_timeout_seconds: 3 },
    workdirs: [{ slot: 1, alias: "ws", path: `${dir.path}/ws` }],
  });
});
afterEach(async () => {
  await mount?.release();
  mount = undefined;
});
afterAll(() => dir?.remove());

/** Polls `read` until it is at most `bound` (or 10 s pass) and returns its last value. */
async function settlesTo(read: () => number, bound: number): Promise<number> {
  await holdsWithin(() => read() <= bound, 10_000);
  return read();
}

describe.skipIf(!available)("a walk-pool worker stuck in a hung filesystem", () => {
  test("is replaced at its call's deadline, the next search is served, threads stay bounded, and it is terminated once the mount is gone", async () => {
    mount = await hangMount(hung);
    const s: McpSession = await startStdio(config);
    const pid = s.pid!;
    const search = (path: string) => s.call("search_text", { workdir: "ws", path, query: "hello" });
    // a count, not an instant's: a thread a worker starts (a pool or heap helper) carries the name
    // "Worker" until it names itself, so one instant may see one more (the old pool kept one per call)
    const twoWorkers = () =>
      poll(
        () => workerThreads(pid) === 2,
        10_000,
        () => `two workers, the stuck one and its replacement (${workerThreads(pid)})`,
      );
    try {
      // The first search starts the only worker: the baseline counts its descriptors.
      expect(structured<{ returned: number }>(await search("ok")).returned).toBe(1);
      await poll(
        () => workerThreads(pid) === 1,
        10_000,
        () => `one worker (${workerThreads(pid)})`,
      );
      const baseFds = openFds(pid);

      // Answered at all while its worker is blocked for as long as the mount hangs: the deadline
      // answered it, not the walk.
      expect(errorCode(await search(""))).toBe("SEARCH_TIMEOUT");
      // Its worker is still blocked in the kernel; a fresh one serves the next search.
      expect(structured<{ returned: number }>(await search("ok")).returned).toBe(1);
      await twoWorkers();

      // More calls caught by the mount: the fresh worker is stuck and retired too, then the pool
      // starts no thread for them (they wait for a unit within their deadline): at most twice
      // search_workers threads, where the old pool started one per caught call.
      for (let i = 0; i < 4; i++) expect(errorCode(await search(""))).toBe("SEARCH_TIMEOUT");
      await twoWorkers();
      expect(structured<{ workdirs: unknown[] }>(await s.call("list_workdirs")).workdirs).toHaveLength(1);

      // The mount goes away: the blocked calls fail, their jobs return, and both workers (each
      // retired while stuck) are terminated; the next search starts a fresh one.
      await mount.release();
      mount = undefined;
      expect(await settlesTo(() => workerThreads(pid), 0)).toBe(0);
      expect(await settlesTo(() => openFds(pid), baseFds)).toBeLessThanOrEqual(baseFds);
      expect(structured<{ returned: number }>(await search("")).returned).toBe(1);
      await poll(
        () => workerThreads(pid) === 1,
        10_000,
        () => `one fresh worker (${workerThreads(pid)})`,
      );
    } finally {
      await s.close();
    }
  }, 90_000);

  test("stdin EOF still ends the process while its worker is stuck", async () => {
    mount = await hangMount(hung);
    const raw = await startRaw(config);
    try {
      // the worker cannot return while the mount hangs: an exit at all did not wait for it
      const { code } = await closeWhileBusy(raw, "search_text", { workdir: "ws", query: "hello" });
      expect(code).toBe(0);
    } finally {
      raw.proc.kill("SIGKILL");
    }
  }, 30_000);
});
