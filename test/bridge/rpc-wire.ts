/**
 * Raw Unix-socket tools for the RPC suites: a client connection that sends arbitrary bytes and
 * reads response lines one at a time, and a fake Bridge that answers each request line with bytes
 * a test chooses (to drive the MCP client's mapping table). Every wait is bounded.
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import type { MethodHandlers, RequestContext } from "../../src/main/bridge/rpc/server.ts";

const BOUND_MS = 10_000;

function bounded<T>(p: Promise<T>, what: string, ms = BOUND_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Handlers for the suites of the envelope and the socket, which answer what no method's result
 * schema describes (an echo of the params, an array, 1 MiB of text): those layers never look inside
 * a result, so the typed table (bridge-protocol/results.ts) is set aside here, and only here.
 */
export const protocolHandlers = (table: Record<string, (params: never, ctx: RequestContext) => unknown>): MethodHandlers => table as MethodHandlers;

/** A fake handler's long poll: it holds its request until `ms` pass or the request is aborted. */
export function heldUntilAbort(signal: AbortSignal, ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

export interface WireResponse {
  request_id: string | null;
  ok: boolean;
  result?: Record<string, unknown>;
  error?: { code: string; message: string };
}

/** One client connection: `send` bytes, `next()` the next response line, `closed` when the peer hung up. */
export class RawConnection {
  private buffer = Buffer.alloc(0);
  private readonly lines: string[] = [];
  private wake: (() => void) | null = null;
  private ended = false;
  readonly closed: Promise<void>;

  private constructor(private readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      for (let nl = this.buffer.indexOf(0x0a); nl !== -1; nl = this.buffer.indexOf(0x0a)) {
        this.lines.push(this.buffer.subarray(0, nl).toString("utf8"));
        this.buffer = this.buffer.subarray(nl + 1);
      }
      this.wake?.();
    });
    socket.on("error", () => undefined);
    this.closed = new Promise((resolve) =>
      socket.on("close", () => {
        this.ended = true;
        this.wake?.();
        resolve();
      }),
    );
  }

  static open(path: string): Promise<RawConnection> {
    return bounded(
      new Promise((resolve, reject) => {
        const socket = connect(path);
        socket.once("connect", () => resolve(new RawConnection(socket)));
        socket.once("error", reject);
      }),
      "connect",
    );
  }

  send(data: string | Uint8Array): void {
    this.socket.write(data);
  }

  /** The next response line as sent, or null once the peer closed with nothing more. */
  async nextLine(ms = BOUND_MS): Promise<string | null> {
    const deadline = Date.now() + ms;
    while (this.lines.length === 0 && !this.ended) {
      await bounded(new Promise<void>((resolve) => (this.wake = resolve)), "a response line", deadline - Date.now());
    }
    return this.lines.shift() ?? null;
  }

  async next(ms = BOUND_MS): Promise<WireResponse> {
    const line = await this.nextLine(ms);
    if (line === null) throw new Error("connection closed before a response");
    return JSON.parse(line) as WireResponse;
  }

  /** Resolves true when the peer closes within `ms`. */
  async closedWithin(ms: number): Promise<boolean> {
    return bounded(
      this.closed.then(() => true),
      "close",
      ms,
    ).catch(() => false);
  }

  close(): void {
    this.socket.destroy();
  }
}

/** Sends `lines` on one fresh connection and reads one response per line. */
export async function exchange(path: string, ...lines: (string | Uint8Array)[]): Promise<WireResponse[]> {
  const conn = await RawConnection.open(path);
  try {
    for (const line of lines) conn.send(typeof line === "string" ? `${line}\n` : line);
    const out: WireResponse[] = [];
    for (let i = 0; i < lines.length; i++) out.push(await conn.next());
    return out;
  } finally {
    conn.close();
  }
}

export const request = (method: string, params: unknown, requestId: unknown = "r1", version: unknown = 1): string =>
  JSON.stringify({ protocol_version: version, request_id: requestId, method, params });

/**
 * A fake Bridge: for each connection, reads the first request line and calls `answer` with it;
 * `answer` returns the bytes to write (null: write nothing), when, and whether to close afterwards.
 */
export interface FakeBridge {
  /** Every request line received, in order. */
  received: string[];
  /** Connections accepted so far. */
  connections: number;
  /** Connections on which the client ended its side. */
  clientEnds: number;
  close(): Promise<void>;
}

export type FakeAnswer = (requestLine: string) => { bytes: string | Uint8Array | null; close?: boolean; delayMs?: number };

export function fakeBridge(path: string, answer: FakeAnswer): Promise<FakeBridge> {
  const state: FakeBridge = {
    received: [],
    connections: 0,
    clientEnds: 0,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    state.connections++;
    sockets.add(socket);
    let buffer = "";
    let answered = false;
    socket.on("data", (chunk) => {
      buffer += chunk.toString("utf8");
      const nl = buffer.indexOf("\n");
      if (nl === -1 || answered) return;
      answered = true;
      const line = buffer.slice(0, nl + 1);
      state.received.push(line);
      const { bytes, close, delayMs = 0 } = answer(line.slice(0, -1));
      setTimeout(() => {
        if (bytes !== null) socket.write(bytes);
        if (close) socket.end();
      }, delayMs);
    });
    socket.on("end", () => state.clientEnds++);
    socket.on("error", () => undefined);
    socket.on("close", () => sockets.delete(socket));
  });
  const close = state.close;
  state.close = () => {
    for (const s of sockets) s.destroy();
    return close();
  };
  return new Promise((resolve) => server.listen(path, () => resolve(state)));
}
