/**
 * One accepted connection (docs/bridge-rpc.md#socket-and-framing to #peer-check): the peer check before anything is read, then
 * strictly one request at a time — read one line, dispatch, write its whole response, then take the
 * next. Lines sent ahead wait in order; reading pauses while too much is waiting or the peer is
 * not reading its responses. An over-long line is answered REQUEST_TOO_LARGE (after the lines
 * before it) and the connection closed. Offers `Connection`.
 */
import type { Socket } from "bun";
import type { RpcResponse } from "../../../shared/bridge-protocol/envelope.ts";
import { byteSize } from "../../../shared/byte-size.ts";
import { LIMITS } from "../../../shared/limits.ts";
import { answerLine, type Dispatch } from "./dispatch.ts";
import { type Frame, LineSplitter } from "./line-splitter.ts";
import { type AllowedPeer, peerAllowed, socketFd } from "./peer-check.ts";
import { encodeResponse, failure } from "./responses.ts";

/** How long a connection the Bridge hangs up on may keep sending before it is closed anyway. */
const LINGER_MS = 1000;

export type ConnectionSocket = Socket<Connection | undefined>;

export interface ConnectionOptions {
  dispatch: Dispatch;
  allowed: AllowedPeer;
  /** Aborted when the server closes: every in-flight request's signal follows it. */
  serverSignal: AbortSignal;
  /** Told the size of every response line written. */
  wrote?: ((bytes: number) => void) | undefined;
}

export class Connection {
  private readonly splitter = new LineSplitter();
  private readonly queue: Frame[] = [];
  private queuedBytes = 0;
  private pumping = false;
  private paused = false;
  private peerEnded = false;
  private hungUp = false;
  private linger: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
  private readonly ended = new AbortController();
  private readonly signal: AbortSignal;
  private unsent: Buffer | null = null;
  private sent: (() => void) | null = null;

  constructor(
    private readonly socket: ConnectionSocket,
    private readonly options: ConnectionOptions,
  ) {
    this.signal = AbortSignal.any([this.ended.signal, options.serverSignal]);
  }

  /** The peer check happens here, before the first byte is read. */
  open(): void {
    if (peerAllowed(socketFd(this.socket), this.options.allowed)) return;
    void this.hangUp(failure(null, "PEER_NOT_AUTHORIZED", "this user may not use the Bridge"));
  }

  onData(chunk: Buffer): void {
    if (this.closed) return;
    // the chunk's memory is not ours to keep beyond this callback
    for (const frame of this.splitter.push(Buffer.from(chunk))) {
      this.queue.push(frame);
      if (frame.kind === "line") this.queuedBytes += frame.bytes.length;
    }
    this.throttle();
    void this.pump();
  }

  /** The peer half-closed: answer what it sent, then close. */
  onEnd(): void {
    this.peerEnded = true;
    if (this.hungUp) this.socket.end();
    else if (!this.pumping && this.queue.length === 0) this.finish();
  }

  onDrain(): void {
    this.flush();
  }

  onClose(): void {
    this.closed = true;
    this.queue.length = 0;
    clearTimeout(this.linger);
    this.ended.abort();
    this.release();
  }

  private throttle(): void {
    const backlog = this.queuedBytes + this.splitter.buffered > LIMITS.max_line_bytes || this.unsent !== null;
    if (backlog && !this.paused) this.socket.pause();
    else if (!backlog && this.paused) this.socket.resume();
    this.paused = backlog;
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      for (let frame = this.queue.shift(); frame !== undefined && !this.closed; frame = this.queue.shift()) {
        if (frame.kind === "too_large") {
          await this.hangUp(failure(null, "REQUEST_TOO_LARGE", `request line is over ${byteSize(LIMITS.max_line_bytes)}`));
          return;
        }
        this.queuedBytes -= frame.bytes.length;
        const response = await answerLine(frame.bytes, this.options.dispatch, { signal: this.signal });
        const line = encodeResponse(response);
        this.options.wrote?.(line.length);
        await this.write(line);
        this.throttle();
      }
    } finally {
      this.pumping = false;
    }
    if (this.peerEnded) this.finish();
  }

  /**
   * The last line of a connection the Bridge ends itself. Closing a Unix socket with unread input
   * makes the kernel report ECONNRESET to the peer, which can then lose the line; so the write side
   * is shut (the peer reads the line, then end of file) and further input is read and discarded
   * until the peer closes, or for at most LINGER_MS.
   */
  private async hangUp(response: RpcResponse): Promise<void> {
    this.closed = true;
    this.hungUp = true;
    this.queue.length = 0;
    await this.write(encodeResponse(response));
    this.socket.shutdown();
    if (this.paused) this.socket.resume();
    this.paused = false;
    this.linger = setTimeout(() => this.socket.end(), LINGER_MS);
    this.linger.unref();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.end();
  }

  /** Resolves once the whole line is handed to the kernel, or the connection is gone. */
  private write(line: Buffer): Promise<void> {
    return new Promise((resolve) => {
      this.unsent = line;
      this.sent = resolve;
      this.flush();
    });
  }

  private flush(): void {
    while (this.unsent !== null) {
      const n = this.socket.write(this.unsent);
      if (n < 0 || n === this.unsent.length) {
        this.release();
        return;
      }
      this.unsent = this.unsent.subarray(n);
      if (n === 0) return; // wait for drain
    }
  }

  private release(): void {
    this.unsent = null;
    const sent = this.sent;
    this.sent = null;
    sent?.();
  }
}
