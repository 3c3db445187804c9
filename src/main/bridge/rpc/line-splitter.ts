/**
 * NDJSON framing for one connection (docs/bridge-rpc.md#socket-and-framing): bytes in, complete lines out, in order.
 * A line's LF is dropped (a `\r` before it stays: it is JSON whitespace). Once the bytes of one
 * line, complete or still unterminated, exceed `max_line_bytes` (limits.ts), the splitter yields `too_large`
 * and ignores all further input: the connection is about to be closed. Offers `LineSplitter` and
 * `Frame`.
 */
import { LIMITS } from "../../../shared/limits.ts";

export type Frame = { kind: "line"; bytes: Buffer } | { kind: "too_large" };

const LF = 0x0a;

export class LineSplitter {
  private parts: Buffer[] = [];
  private partBytes = 0;
  private overflowed = false;

  /** Bytes held for the current unterminated line. */
  get buffered(): number {
    return this.partBytes;
  }

  push(chunk: Buffer): Frame[] {
    if (this.overflowed) return [];
    const frames: Frame[] = [];
    let start = 0;
    for (let nl = chunk.indexOf(LF, start); nl !== -1; nl = chunk.indexOf(LF, start)) {
      if (this.partBytes + (nl - start) > LIMITS.max_line_bytes) return this.overflow(frames);
      const piece = chunk.subarray(start, nl);
      frames.push({ kind: "line", bytes: this.parts.length === 0 ? piece : Buffer.concat([...this.parts, piece]) });
      this.parts = [];
      this.partBytes = 0;
      start = nl + 1;
    }
    if (start < chunk.length) {
      this.parts.push(chunk.subarray(start));
      this.partBytes += chunk.length - start;
      if (this.partBytes > LIMITS.max_line_bytes) return this.overflow(frames);
    }
    return frames;
  }

  private overflow(frames: Frame[]): Frame[] {
    this.overflowed = true;
    this.parts = [];
    this.partBytes = 0;
    frames.push({ kind: "too_large" });
    return frames;
  }
}
