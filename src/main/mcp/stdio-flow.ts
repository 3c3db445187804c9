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
 */
import { EventEmitter } from "node:events";
import { peerHungUp } from "../../shared/ffi/libc.ts";

const MAX_UNSENT = 8 << 20;
const MAX_HELD = 16 << 20;
const HANGUP_POLL_MS = 100;
const NL = 0x0a;

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

export class StdioFlow {
  readonly input: GatedInput;
  /** The stdout the SDK's transport writes: never reports back-pressure to it (we handle it here). */
  readonly output: { write(chunk: string): boolean; once(event: string, fn: () => void): void };
  private unsent = 0;
  private readonly held: Buffer[] = [];
  private heldBytes = 0;
  private pumping = false;
  private hangupTimer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly stdin: NodeJS.ReadStream,
    stdout: NodeJS.WriteStream,
    private readonly onHangup: () => void,
  ) {
    this.input = new GatedInput(stdin);
    this.output = {
      write: (chunk) => {
        const bytes = Buffer.byteLength(chunk);
        this.unsent += bytes;
        stdout.write(chunk, () => {
          this.unsent -= bytes;
          this.pump();
        });
        return true;
      },
      once: () => undefined,
    };
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
      this.hold(chunk.subarray(start, nl + 1));
      start = nl + 1;
    }
    if (start < chunk.length) this.hold(chunk.subarray(start));
    if (this.heldBytes > MAX_HELD) this.stopReading();
    this.pump();
  }

  private hold(piece: Buffer): void {
    this.held.push(piece);
    this.heldBytes += piece.length;
  }

  /** Dispatches one held line now and schedules the next, while the output is under its bound. */
  private pump(): void {
    if (this.pumping || !this.open) return;
    const piece = this.held.shift();
    if (!piece) return;
    this.heldBytes -= piece.length;
    if (this.hangupTimer && this.heldBytes <= MAX_HELD / 2) this.resumeReading();
    this.input.emit("data", piece);
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
