/**
 * Measures how long the server's event loop stalls while one heavy call runs: a `list_workdirs`
 * probe is sent again and again over the same session until the heavy call answers, and each
 * probe's round trip is recorded. A server whose heavy work runs off its main thread (or yields)
 * answers every probe within milliseconds; one that blocks answers the first probe only when the
 * heavy call is done. Tests judge a stall against the heavy call's own duration in the same run (see
 * test/mcp/event-loop.test.ts), never against a fixed number of milliseconds.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { McpSession } from "./mcp-client.ts";

export interface Stall {
  /** The heavy call's result and its round trip. */
  result: CallToolResult;
  heavyMs: number;
  /** Round trips of the probes answered while the heavy call ran (the last may end after it). */
  probesMs: number[];
  /** The slowest probe; 0 when none was sent. */
  maxMs: number;
  /** Probes answered before the heavy call was: the event loop turned while it ran. */
  answeredDuring: number;
}

export async function measureStall(session: McpSession, heavy: () => Promise<CallToolResult>): Promise<Stall> {
  const started = performance.now();
  let heavyMs = -1;
  const pending = heavy().then((r) => {
    heavyMs = performance.now() - started;
    return r;
  });
  const probesMs: number[] = [];
  let answeredDuring = 0;
  while (heavyMs < 0) {
    const sent = performance.now();
    const probe = await session.call("list_workdirs");
    if (probe.isError) throw new Error("the list_workdirs probe failed");
    probesMs.push(performance.now() - sent);
    if (heavyMs < 0) answeredDuring++;
    // Pacing, not synchronization: probes back to back would take a core from the heavy call.
    await Bun.sleep(10);
  }
  const result = await pending;
  return { result, heavyMs, probesMs, maxMs: Math.max(0, ...probesMs), answeredDuring };
}

/** A stall a human can read in a failure message. */
export const describeStall = (s: Stall) =>
  `heavy call ${s.heavyMs.toFixed(0)} ms, ${s.probesMs.length} probes (${s.answeredDuring} answered before it), slowest ${s.maxMs.toFixed(0)} ms`;
