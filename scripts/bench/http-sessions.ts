#!/usr/bin/env bun
/**
 * HTTP session memory (docs/reliability.md, "Hardening: writes, temp files, transfers and HTTP"):
 * a real `serverfs mcp --http` with the default `[server] http_max_sessions` (256) takes N
 * sessions that initialize and never send DELETE; the server's RSS and peak RSS are read from
 * /proc before and after, and one more session is opened to show the server still serves.
 * stdout gets one JSON document.
 *
 *   bun run scripts/bench/http-sessions.ts [sessions = 10000]
 */
import { parseAudit } from "../../test/helpers/mcp-client.ts";
import { spawnCli } from "../../test/helpers/process.ts";
import { tempDir, writeConfig } from "../../test/helpers/workspace.ts";
import { peakRssMb, rssMb } from "./lib/bridge-rss.ts";

const total = Number(process.argv[2] ?? 10_000);
const CONCURRENCY = 8;
const INIT = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } },
});

const dir = tempDir("serverfs-sessions-");
const config = writeConfig(dir.path, { workdirs: [{ slot: 1, alias: "ws", path: dir.dir("ws") }] });
const proc = spawnCli(["mcp", "--config", config, "--http", "127.0.0.1:0"]);
let err = "";
const started = new Promise<number>((resolve) => {
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stderr) {
      err += decoder.decode(chunk, { stream: true });
      const s = parseAudit(err).find((r) => r["event"] === "startup");
      if (s) resolve(Number(String(s["listen"]).split(":").pop()));
    }
  })();
});
const port = await started;

async function initialize(): Promise<number> {
  const r = await fetch(`http://127.0.0.1:${port}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: INIT,
  });
  await r.text();
  return r.status;
}

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
  const after = { rss_mb: rssMb(proc.pid), peak_rss_mb: peakRssMb(proc.pid) };
  const closed = parseAudit(err).filter((r) => r["event"] === "http_session_closed").length;
  console.log(
    JSON.stringify(
      {
        sessions_opened: total,
        statuses,
        sessions_closed_by_server: closed,
        before,
        after,
        rss_growth_mb: Math.round((after.rss_mb - before.rss_mb) * 100) / 100,
        still_serving: (await initialize()) === 200,
        ms_per_session: Math.round((elapsed / total) * 100) / 100,
      },
      null,
      2,
    ),
  );
} finally {
  proc.kill("SIGTERM");
  await proc.exited;
  dir.remove();
}
