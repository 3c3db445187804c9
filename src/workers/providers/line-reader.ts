/**
 * Incremental newline-delimited JSON reading of a provider's stream (docs/runtimes.md#process-model).
 *
 * Offers:
 * - `PROVIDER_LINE_CAP`: the fixed 64 MiB per-line cap (an 8 MiB result escaped in JSON fits).
 * - `readJsonLines(stream, options?)`: an async generator of the stream's lines, each parsed as JSON
 *   (`NOT_JSON` for a line that is not, or that nests deeper than line-value.ts allows), strictly
 *   UTF-8, empty lines skipped, a final unterminated line included. `options.cap` overrides the line
 *   cap; `options.keepBytes` is how much of a long string a line keeps (long-line.ts; default: all
 *   of it). An oversized or non-UTF-8 line throws `ServerFsError("AGENT_PROVIDER_ERROR")` after every
 *   earlier line was yielded. When the generator ends early (error or the consumer stops), the stream
 *   is cancelled, so a provider still writing gets a broken pipe instead of blocking forever.
 *
 * A line up to `LONG_STRING_BYTES` is decoded and parsed whole; a longer one goes through `LongLine`
 * as its bytes arrive, so it is never held whole, neither as bytes nor as a string.
 */
import { ServerFsError } from "../../shared/errors.ts";
import { NOT_JSON, parseLine } from "./line-value.ts";
import { LONG_STRING_BYTES, LongLine } from "./long-line.ts";

export { NOT_JSON };

export const PROVIDER_LINE_CAP = 64 * 1024 * 1024;

/** A parsed line: any JSON value, or `NOT_JSON`. */
export type JsonLine = unknown;

export interface LineOptions {
  cap?: number;
  keepBytes?: number;
}

/**
 * A long line's chunks are garbage once read, but the collector only notices them late: collecting
 * after every this many bytes of one lets the next chunks reuse their memory instead of new pages.
 */
const LONG_LINE_GC_BYTES = 4 * 1024 * 1024;

const NEWLINE = 0x0a;
const CR = 0x0d;

const tooLong = (): ServerFsError => new ServerFsError("AGENT_PROVIDER_ERROR", "provider sent a line over the line limit");

/** A short line, whole: empty (or a lone CR) → undefined, to be skipped. */
function parseShort(parts: Uint8Array[]): JsonLine | undefined {
  const bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  if (bytes.length === 0 || (bytes.length === 1 && bytes[0] === CR)) return undefined;
  return parseLine(bytes);
}

export async function* readJsonLines(stream: ReadableStream<Uint8Array>, options: LineOptions = {}): AsyncGenerator<JsonLine> {
  const cap = options.cap ?? PROVIDER_LINE_CAP;
  const keepBytes = options.keepBytes ?? cap;
  const reader = stream.getReader();
  // the unterminated start of a short line, in arrival order; a long one is fed to `long` instead
  let pending: Uint8Array[] = [];
  let long: LongLine | null = null;
  let lineBytes = 0;
  let sinceGc = 0;
  /** Adds a piece of the current line; `copy` when it must outlive its chunk. */
  const add = (piece: Uint8Array, copy: boolean): void => {
    lineBytes += piece.length;
    if (lineBytes > cap) throw tooLong();
    if (long === null && lineBytes > LONG_STRING_BYTES) {
      long = new LongLine(keepBytes);
      for (const p of pending) long.push(p);
      pending = [];
    }
    if (long === null) {
      pending.push(copy ? piece.slice() : piece);
      return;
    }
    long.push(piece);
    sinceGc += piece.length;
    if (sinceGc >= LONG_LINE_GC_BYTES) {
      sinceGc = 0;
      Bun.gc(true);
    }
  };
  const finish = (): JsonLine | undefined => {
    const value = long !== null ? long.end() : parseShort(pending);
    pending = [];
    long = null;
    lineBytes = 0;
    return value;
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      let start = 0;
      for (let nl = value.indexOf(NEWLINE); nl >= 0; nl = value.indexOf(NEWLINE, start)) {
        add(value.subarray(start, nl), false);
        start = nl + 1;
        const line = finish();
        if (line !== undefined) yield line;
      }
      if (start < value.length) add(value.subarray(start), true);
    }
    if (lineBytes > 0) {
      const line = finish();
      if (line !== undefined) yield line;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
