/**
 * One persistent NDJSON connection over a Unix socket, for timing round trips: a request is one
 * line out and the next line in. Responses on one connection come back in request order (docs/bridge-rpc.md
 * docs/bridge-rpc.md#socket-and-framing), so a FIFO of waiters pairs them; several requests may be in flight at once (pipelining).
 * The same client drives the Bridge and the bare echo server, so both pay the same client costs.
 */
import type { Socket } from "bun";
import { median } from "./measure.ts";

export interface LineClient {
  /** Writes `line` (without its LF) and resolves with the response line that answers it. */
  request(line: string): Promise<string>;
  close(): void;
}

const LF = 0x0a;

export async function connectLines(socketPath: string): Promise<LineClient> {
  const waiters: { resolve: (line: string) => void; reject: (e: Error) => void }[] = [];
  let parts: Buffer[] = [];
  let unsent: Buffer | null = null;
  let failure: Error | null = null;
  const fail = (e: Error) => {
    failure ??= e;
    for (const w of waiters.splice(0)) w.reject(failure);
  };
  const flush = (socket: Socket<undefined>) => {
    while (unsent !== null) {
      const n = socket.write(unsent);
      if (n === unsent.length) unsent = null;
      else if (n <= 0)
        return; // wait for drain
      else unsent = unsent.subarray(n);
    }
  };
  const socket = await Bun.connect<undefined>({
    unix: socketPath,
    socket: {
      data(_s, chunk) {
        let start = 0;
        for (let nl = chunk.indexOf(LF); nl >= 0; nl = chunk.indexOf(LF, start)) {
          parts.push(chunk.subarray(start, nl));
          const line = Buffer.concat(parts).toString("utf8");
          parts = [];
          start = nl + 1;
          const w = waiters.shift();
          if (!w) return fail(new Error("a response line nobody asked for"));
          w.resolve(line);
        }
        // the chunk's memory is reused after this callback
        if (start < chunk.length) parts.push(Buffer.from(chunk.subarray(start)));
      },
      drain: (s) => flush(s),
      close: () => fail(new Error("the connection closed")),
      error: (_s, e) => fail(e),
    },
  });
  return {
    request(line) {
      if (failure) return Promise.reject(failure);
      return new Promise((resolve, reject) => {
        waiters.push({ resolve, reject });
        const bytes = Buffer.from(`${line}\n`, "utf8");
        unsent = unsent === null ? bytes : Buffer.concat([unsent, bytes]);
        flush(socket);
      });
    },
    close: () => socket.end(),
  };
}

export interface RoundTrips {
  requests: number;
  /** With 1 in flight: the median round trip; with more: the median time from write to answer. */
  p50_ms: number;
  requests_per_s: number;
}

/**
 * Sends `line` `total` times keeping `depth` requests in flight (1 = strictly sequential) and
 * checks every answer with `accept`.
 */
export async function roundTrips(client: LineClient, line: string, total: number, depth: number, accept: (response: string) => boolean): Promise<RoundTrips> {
  const latencies: number[] = [];
  let sent = 0;
  const lane = async () => {
    while (sent < total) {
      sent++;
      const t0 = performance.now();
      const response = await client.request(line);
      latencies.push(performance.now() - t0);
      if (!accept(response)) throw new Error(`unexpected response: ${response.slice(0, 200)}`);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: depth }, lane));
  const elapsed = performance.now() - started;
  return {
    requests: total,
    p50_ms: Math.round(median(latencies) * 1000) / 1000,
    requests_per_s: Math.round(total / (elapsed / 1000)),
  };
}

export interface Stall {
  requests: number;
  p50_ms: number;
  max_ms: number;
}

/**
 * Sends `line` one at a time, `gapMs` apart, for `forMs`: the longest round trip bounds how long the
 * server's event loop stood still meanwhile (a round trip is tens of microseconds). The gap keeps the
 * probe's own garbage small, so it does not become what a later RSS sample measures.
 */
export async function longestRoundTrip(client: LineClient, line: string, forMs: number, gapMs: number, accept: (response: string) => boolean): Promise<Stall> {
  const latencies: number[] = [];
  for (const end = performance.now() + forMs; performance.now() < end; ) {
    const t0 = performance.now();
    const response = await client.request(line);
    latencies.push(performance.now() - t0);
    if (!accept(response)) throw new Error(`unexpected response: ${response.slice(0, 200)}`);
    await Bun.sleep(gapMs);
  }
  return {
    requests: latencies.length,
    p50_ms: Math.round(median(latencies) * 1000) / 1000,
    max_ms: Math.round(Math.max(...latencies) * 1000) / 1000,
  };
}
