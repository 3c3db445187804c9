/**
 * Memory is bounded under concurrency and abuse (docs/reliability.md, "Hardening: the event loop,
 * reads and memory"): concurrent searches share the walk pool's reused scratch buffers instead of
 * one file-sized buffer each, and a client that never reads stdout makes the server hold its
 * requests instead of buffering every answer, while stdin EOF still ends it; past
 * 16 MiB of held requests it stops reading stdin and still sees the client hang up (`poll(2)`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { closeSync, constants, openSync, readFileSync } from "node:fs";
import { startStdio, structured } from "../helpers/mcp-client.ts";
import { holdsWithin } from "../helpers/poll.ts";
import { INIT } from "../helpers/raw-stdio.ts";
import { startUnreadStdout } from "../helpers/unread-stdout.ts";
import { BUN, CLI, REPO_ROOT, type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

const MiB = 2 ** 20;

/** `VmRSS` and `VmHWM` (peak RSS) of a process, in bytes. */
function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN) * 1024;
  return { rss: kb("VmRSS"), peak: kb("VmHWM") };
}

let dir: TempDir;

beforeAll(() => {
  dir = tempDir();
  const line = "the quick brown fox jumps over the lazy dog, again and again and again\n";
  dir.file("tree/large.txt", line.repeat(Math.floor((48 * MiB) / line.length)));
  for (let i = 0; i < 20; i++) dir.file(`tree/src/f${i}.txt`, line.repeat(20));
  for (let i = 0; i < 500; i++) dir.file(`wide/entry-with-a-fairly-long-name-${String(i).padStart(4, "0")}.txt`, "x");
});
afterAll(() => dir?.remove());

describe("concurrent searches", () => {
  test("16 concurrent search_text over a tree with one 48 MiB file raise peak RSS by far less than 16 file-sized buffers", async () => {
    const config = writeConfig(dir.path, { limits: { search_workers: 2 }, workdirs: [{ slot: 1, alias: "t", path: `${dir.path}/tree` }] }, "search.toml");
    const s = await startStdio(config);
    try {
      const pid = s.pid!;
      expect(structured<{ returned: number }>(await s.call("search_text", { workdir: "t", query: "fox", path: "src", limit: 1 })).returned).toBe(1);
      const before = memory(pid).rss;
      const results = await Promise.all(Array.from({ length: 16 }, () => s.call("search_text", { workdir: "t", query: "zebra" })));
      for (const r of results) expect(structured<{ returned: number }>(r).returned).toBe(0);
      const rise = memory(pid).peak - before;
      // Two workers, each one 48 MiB scratch buffer: about 100 MiB; 16 buffers would be 768 MiB.
      expect(rise / MiB).toBeLessThan(300);
    } finally {
      await s.close();
    }
  }, 60_000);
});

describe("output backpressure on stdio", () => {
  test("a client that never reads stdout: requests are held, memory stays bounded, EOF still ends the server", async () => {
    const config = writeConfig(dir.path, { limits: { max_list_entries: 500 }, workdirs: [{ slot: 1, alias: "w", path: `${dir.path}/wide` }] }, "wide.toml");
    // stdout is a FIFO that this test holds open and never reads.
    const server = await startUnreadStdout(config, dir.path);
    const { proc, calls } = server;
    try {
      const before = memory(proc.pid).rss;
      // 3,000 pages of 500 entries: about 200 MB of answers if every one were dispatched.
      const REQUESTS = 3000;
      await server.requestPages(REQUESTS, 500);
      // The answers pile up until the bound, then the server stops dispatching.
      await holdsWithin(() => calls() >= 20, 10_000);
      // the measurement: the peak over a 1.5 s window while the answers are held back
      let peak = 0;
      for (const until = Date.now() + 1500; Date.now() < until; await Bun.sleep(50)) peak = Math.max(peak, memory(proc.pid).rss);
      expect(calls()).toBeLessThan(REQUESTS / 2);
      expect((peak - before) / MiB).toBeLessThan(200);
      // a server that went on dispatching into the unread pipe would never get to its exit
      proc.stdin.end();
      const code = await Promise.race([proc.exited, Bun.sleep(5000).then(() => "still running")]);
      expect(code).toBe(0);
    } finally {
      server.dispose();
    }
  }, 60_000);

  test("past 16 MiB of held requests the server stops reading stdin, and still sees the client hang up and exits", async () => {
    const config = writeConfig(dir.path, { limits: { max_list_entries: 500 }, workdirs: [{ slot: 1, alias: "w", path: `${dir.path}/wide` }] }, "held.toml");
    const stdoutFifo = `${dir.path}/stdout-held.fifo`;
    const stdinFifo = `${dir.path}/stdin-held.fifo`;
    Bun.spawnSync(["mkfifo", stdoutFifo, stdinFifo]);
    const reader = openSync(stdoutFifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(stdoutFifo, constants.O_WRONLY);
    // The client is its own process holding the only write end of stdin: 40 MiB of requests, 8 KiB
    // each, written with blocking writes, the running total printed after each.
    const client = Bun.spawn(
      [
        BUN,
        "-e",
        `
        import { openSync, writeSync } from "node:fs";
        const fd = openSync(${JSON.stringify(stdinFifo)}, "w");
        let total = 0;
        const send = (msg) => { total += writeSync(fd, JSON.stringify(msg) + "\\n"); console.log(total); };
        send(${JSON.stringify(INIT)});
        send({ jsonrpc: "2.0", method: "notifications/initialized" });
        const pad = "x".repeat(8192);
        for (let id = 1; id <= 5120; id++) send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "list_directory", arguments: { workdir: "w", limit: 500 }, _meta: { pad } } });
        setInterval(() => {}, 1 << 30);
        `,
      ],
      { stdout: "pipe", stderr: "ignore" },
    );
    const stdin = openSync(stdinFifo, constants.O_RDONLY);
    const proc = Bun.spawn([BUN, CLI, "mcp", "--config", config], { cwd: REPO_ROOT, stdin, stdout: writer, stderr: "ignore" });
    closeSync(writer);
    closeSync(stdin);
    let written = 0;
    void (async () => {
      const decoder = new TextDecoder();
      let buffer = "";
      for await (const chunk of client.stdout) {
        buffer += decoder.decode(chunk, { stream: true });
        const lines = buffer.split("\n");
        buffer = lines.pop()!;
        if (lines.length > 0) written = Number(lines.at(-1));
      }
    })();
    try {
      // The answers clog stdout, requests are held, and past 16 MiB held the server stops reading:
      // the client's writes then block (what it wrote is what the server read plus one pipe buffer).
      const deadline = Date.now() + 20_000;
      let last = -1;
      // "blocked" is no progress over a quiet 300 ms: a span of time is the fact here
      while (Date.now() < deadline && !(written > 16 * MiB && written === last)) {
        last = written;
        await Bun.sleep(300);
      }
      expect(written).toBeGreaterThan(16 * MiB);
      expect(written).toBeLessThan(24 * MiB);
      expect(proc.exitCode).toBeNull();
      // The client dies: the pipe's writer is gone although the server reads nothing more.
      // reading nothing more, only the hang-up watch can see the writer go: an exit at all is its doing
      client.kill("SIGKILL");
      const code = await Promise.race([proc.exited, Bun.sleep(5000).then(() => "still running")]);
      expect(code).toBe(0);
    } finally {
      client.kill("SIGKILL");
      proc.kill("SIGKILL");
      closeSync(reader);
    }
  }, 60_000);
});
