/**
 * A client that never reads stdout (docs/reliability.md, "Hardening: the event loop, reads and
 * memory"): a real `serverfs mcp` whose stdout is a FIFO held open and never read gets `requests`
 * `list_directory` calls for 500-entry pages at once. The server's RSS is sampled while it holds
 * them; how many calls it dispatched is counted from its audit log (one answer's size is read first,
 * from a session that does read). Then stdin is closed and the
 * time to exit measured.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startStdio } from "../../../test/helpers/mcp-client.ts";
import { startUnreadStdout } from "../../../test/helpers/unread-stdout.ts";
import { writeConfig } from "../../../test/helpers/workspace.ts";
import { maxRssDuring, rssMb } from "./bridge-rss.ts";

const ENTRIES = 500;
/** How long the held requests are watched once the server has stopped dispatching. */
const WATCH_MS = 1500;

export interface UnreadStdout {
  requests: number;
  answer_bytes: number;
  answers_mb_if_all_dispatched: number;
  dispatched: number;
  rss_before_mb: number;
  rss_max_mb: number;
  rss_rise_mb: number;
  exit_after_eof_ms: number;
}

export async function unreadStdout(root: string, requests: number): Promise<UnreadStdout> {
  const wide = join(root, "wide");
  mkdirSync(wide);
  for (let i = 0; i < ENTRIES; i++) writeFileSync(join(wide, `entry-with-a-fairly-long-name-${String(i).padStart(4, "0")}.txt`), "x");
  const config = writeConfig(root, { limits: { max_list_entries: ENTRIES }, workdirs: [{ slot: 1, alias: "w", path: wide }] }, "unread.toml");
  const reading = await startStdio(config);
  const answerBytes = JSON.stringify(await reading.call("list_directory", { workdir: "w", limit: ENTRIES })).length;
  await reading.close();
  const server = await startUnreadStdout(config, root);
  const { proc, calls } = server;
  try {
    const deadline = Date.now() + 10_000;
    const before = rssMb(proc.pid);
    const { max_mb } = await maxRssDuring(proc.pid, 20, async () => {
      await server.requestPages(requests, ENTRIES);
      while (calls() < 20 && Date.now() < deadline) await Bun.sleep(20);
      await Bun.sleep(WATCH_MS);
    });
    const dispatched = calls();
    const closedAt = performance.now();
    proc.stdin.end();
    await Promise.race([proc.exited, Bun.sleep(5000)]);
    const exitMs = performance.now() - closedAt;
    return {
      requests,
      answer_bytes: answerBytes,
      answers_mb_if_all_dispatched: Math.round((requests * answerBytes) / 1e6),
      dispatched,
      rss_before_mb: before,
      rss_max_mb: max_mb,
      rss_rise_mb: Math.round((max_mb - before) * 100) / 100,
      exit_after_eof_ms: Math.round(exitMs),
    };
  } finally {
    server.dispose();
  }
}
