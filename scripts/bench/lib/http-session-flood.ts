/**
 * HTTP session memory (docs/reliability.md, "Hardening: writes, temp files, transfers and HTTP"):
 * a real `serverfs mcp --http` with the default `[server] http_max_sessions` (256) takes `total`
 * sessions that initialize and never send DELETE; the server's RSS and peak RSS are read from /proc
 * before and after, and one more session is opened to show the server still serves.
 */
import { parseAudit } from "../../../test/helpers/mcp-client.ts";
import { spawnCli } from "../../../test/helpers/process.ts";
import { tempDir, writeConfig } from "../../../test/helpers/workspace.ts";
import { peakRssMb, rssMb } from "./bridge-rss.ts";

const CONCURRENCY = 8;
const INIT = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } },
});

export interface SessionFlood {
  sessions_opened: number;
  statuses: Record<string, number>;
  sessions_closed_by_server: number;
  before: { rss_mb: number; peak_rss_mb: number };
  after: { rss_mb: number; peak_rss_mb: number };
  rss_growth_mb: number;
  peak_rss_growth_mb: number;
  still_serving: boolean;
  ms_per_session: number;
}

export async function floodHttpSessions(total: number): Promise<SessionFlood> {
  const dir = tempDir("serverfs-sessions-");
  const config = writeConfig(dir.path, { workdirs: [{ slot: 1, alias: "ws", path: dir.dir("ws") }] });
  const proc = spawnCli(["mcp", "--config", config, "--http", "127.0.0.1:0"]);
  let err = "";
  const port = await new Promise<number>((resolve) => {
    void (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of proc.stderr) {
        err += decoder.decode(chunk, { stream: true });
        const s = parseAudit(err).find((r) => r["event"] === "startup");
        if (s) resolve(Number(String(s["listen"]).split(":").pop()));
      }
    })();
  });
  const initialize = async (): Promise<number> => {
    const r = await fetch(`http://127.0.0.1:${port}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: INIT,
    });
    await r.text();
    return r.status;
  };
  try {
    await initialize();
    const before = { rss_mb: rssMb(proc.pid), peak_rss_mb: peakRssMb(proc.pid) };
    const statuses: Record<string, number> = {};
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < total) {
          next++;
          const s = String(await initialize());
          statuses[s] = (statuses[s] ?? 0) + 1;
        }
      }),
    );
    const elapsed = performance.now() - t0;
    // The log is read as it arrives: let its last lines in before counting the closes.
    for (let seen = -1; seen !== err.length; ) {
      seen = err.length;
      await Bun.sleep(300);
    }
    const after = { rss_mb: rssMb(proc.pid), peak_rss_mb: peakRssMb(proc.pid) };
    const round = (x: number) => Math.round(x * 100) / 100;
    return {
      sessions_opened: total,
      statuses,
      sessions_closed_by_server: parseAudit(err).filter((r) => r["event"] === "http_session_closed").length,
      before,
      after,
      rss_growth_mb: round(after.rss_mb - before.rss_mb),
      peak_rss_growth_mb: round(after.peak_rss_mb - before.rss_mb),
      still_serving: (await initialize()) === 200,
      ms_per_session: round(elapsed / total),
    };
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
    dir.remove();
  }
}
