#!/usr/bin/env bun
/**
 * HTTP session memory (docs/reliability.md, "Hardening: writes, temp files, transfers and HTTP"):
 * N sessions that never send DELETE against a real `serverfs mcp --http` (lib/http-session-flood.ts).
 * stdout gets one JSON document.
 *
 *   bun run scripts/bench/http-sessions.ts [sessions = 10000]
 */
import { floodHttpSessions } from "./lib/http-session-flood.ts";

console.log(JSON.stringify(await floodHttpSessions(Number(process.argv[2] ?? 10_000)), null, 2));
