/**
 * Output backpressure on stdio (docs/reliability.md, "Hardening"): a client that sends requests
 * but never reads stdout must not make the server buffer every answer. The transport reads stdin
 * through `input` and writes through `output`; `output` counts the bytes handed to stdout that the
 * pipe has not taken yet. Requests are dispatched one line per turn of the event loop (so a fast
 * answer is counted before the next request goes out); while the unsent bytes exceed `MAX_UNSENT`,
 * requests are held, not dispatched, until the client reads again.
 *
 * stdin is still read while requests are held, so its EOF is seen at once (docs/mcp-tools.md#stdio).
 * Only past `MAX_HELD` bytes of held requests does reading stop, letting the pipe push back on the
 * client; EOF is then watched with `poll(2)` every `HANGUP_POLL_MS`, which sees the writer hang up
 * although unread requests remain.
 *
 * Lines are assembled here and handed to the transport whole. One longer than `maxLine` would make
 * the SDK's reader end the session; instead its bytes are dropped as they arrive (only the first and
 * the last `END_BYTES` are kept), and at its newline what those ends say of the message
 * (message-ends.ts) is handed to `onOversized`, whose answer, if any, is written like any other.
 */
import { EventEmitter } from "node:events";
import { peerHungUp } from "../../shared/ffi/libc.ts";
import { type MessagePrefix, readMessageIdFromEnd, readMessagePrefix } from "./message-ends.ts";

const MAX_UNSENT = 8 << 20;
const MAX_HELD = 16 << 20;
const HANGUP_POLL_MS = 100;
const END_BYTES = 64 * 1024;
const NL = 0x0a;

/** A line dropped for its size: how long it was and what its ends say. */
export interface OversizedLine {
  bytes: number;
  head: MessagePrefix;
}

/** The stdin the SDK's transport reads: `data` events, forwarded or held. */
class GatedInput extends EventEmitter {
  constructor(private readonly stdin: NodeJS.ReadStream) {
    super();
  }

  /** The transport pauses its input when it closes. */
  pause(): this {
    this.stdin.pause();
    return this;
  }
}

/**
 * The stdout the SDK's transport writes: it never reports back-pressure to it (we handle it here),
 * and it is an emitter only because the transport listens on it for `error` and `drain`.
 */
class CountedOutput extends EventEmitter {
  constructor(private readonly writeChunk: (chunk: string) => void) {
    super();
  }

  write(chunk: string): boolean {
    this.writeChunk(chunk);
    return true;
  }
}

/** The first `n` bytes of `pieces` together. */
function firstBytes(pieces: Buffer[], n: number): Buffer {
  const taken: Buffer[] = [];
  let size = 0;
  for (const p of pieces) {
    if (size >= n) break;
    taken.push(p.subarray(0, n - size));
    size += taken.at(-1)!.length;
  }
  return Buffer.concat(taken);
}

/** The last `n` bytes of `pieces` together. */
function lastBytes(pieces: Buffer[], n: number): Buffer {
  const taken: Buffer[] = [];
  let size = 0;
  for (let i = pieces.length - 1; i >= 0 && size < n; i--) {
    const p = pieces[i]!;
    taken.unshift(p.subarray(Math.max(0, p.length - (n - size))));
    size += taken[0]!.length;
  }
  return Buffer.concat(taken);
}

export class StdioFlow {
  readonly input: GatedInput;
  readonly output: CountedOutput;
  private unsent = 0;
  private readonly held: Buffer[] = [];
  private heldBytes = 0;
  private pumping = false;
  private hangupTimer: ReturnType<typeof setInterval> | null = null;
  /** The line being read, not yet ended by a newline. */
  private partial: Buffer[] = [];
  private partialBytes = 0;
  /** Set while the rest of an oversized line is dropped: its first and (so far) last bytes. */
  private dropping: { head: Buffer; tail: Buffer } | null = null;

  constructor(
    private readonly stdin: NodeJS.ReadStream,
    stdout: NodeJS.WriteStream,
    private readonly maxLine: number,
    private readonly onHangup: () => void,
    /** The message to answer the line with, or null. */
    private readonly onOversized: (line: OversizedLine) => object | null,
  ) {
    this.input = new GatedInput(stdin);
    this.output = new CountedOutput((chunk) => {
      const bytes = Buffer.byteLength(chunk);
      this.unsent += bytes;
      stdout.write(chunk, () => {
        this.unsent -= bytes;
        this.pump();
      });
    });
    stdin.on("data", (chunk: Buffer) => this.receive(chunk));
    stdin.on("error", (e) => this.input.emit("error", e));
  }

  private get open(): boolean {
    return this.unsent <= MAX_UNSENT;
  }

  /**
   * Every chunk is cut into lines, and only one line is dispatched per turn of the event loop: a
   * chunk can hold hundreds of requests, and an answer is counted only once its call has run.
   */
  private receive(chunk: Buffer): void {
    let start = 0;
    for (let nl = chunk.indexOf(NL); nl !== -1; nl = chunk.indexOf(NL, start)) {
      this.take(chunk.subarray(start, nl + 1), true);
      start = nl + 1;
    }
    if (start < chunk.length) this.take(chunk.subarray(start), false);
    if (this.heldBytes > MAX_HELD) this.stopReading();
    this.pump();
  }

  /** Adds a piece of the current line; `ends` when it holds the line's newline. */
  private take(piece: Buffer, ends: boolean): void {
    if (!this.dropping && this.partialBytes + piece.length > this.maxLine) {
      this.dropping = { head: firstBytes([...this.partial, piece], END_BYTES), tail: Buffer.alloc(0) };
      this.partial = [];
    }
    this.partialBytes += piece.length;
    if (this.dropping) this.dropping.tail = lastBytes([this.dropping.tail, piece], END_BYTES);
    else this.partial.push(piece);
    if (!ends) return;
    if (this.dropping) this.refuse(this.dropping.head, this.dropping.tail, this.partialBytes);
    else this.hold(this.partial.length === 1 ? piece : Buffer.concat(this.partial));
    this.partial = [];
    this.partialBytes = 0;
    this.dropping = null;
  }

  private hold(line: Buffer): void {
    this.held.push(line);
    this.heldBytes += line.length;
  }

  private refuse(first: Buffer, last: Buffer, bytes: number): void {
    const head = readMessagePrefix(first.toString("utf8"));
    head.id ??= readMessageIdFromEnd(last.toString("utf8"));
    const answer = this.onOversized({ bytes, head });
    if (answer) this.output.write(`${JSON.stringify(answer)}\n`);
  }

  /** Dispatches one held line now and schedules the next, while the output is under its bound. */
  private pump(): void {
    if (this.pumping || !this.open) return;
    const line = this.held.shift();
    if (!line) return;
    this.heldBytes -= line.length;
    if (this.hangupTimer && this.heldBytes <= MAX_HELD / 2) this.resumeReading();
    this.input.emit("data", line);
    if (this.held.length === 0) return;
    this.pumping = true;
    setImmediate(() => {
      this.pumping = false;
      this.pump();
    });
  }

  private stopReading(): void {
    if (this.hangupTimer) return;
    this.stdin.pause();
    this.hangupTimer = setInterval(() => {
      if (peerHungUp(0)) this.onHangup();
    }, HANGUP_POLL_MS);
    this.hangupTimer.unref();
  }

  private resumeReading(): void {
    clearInterval(this.hangupTimer!);
    this.hangupTimer = null;
    this.stdin.resume();
  }
}
