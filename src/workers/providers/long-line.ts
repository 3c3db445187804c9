/**
 * Parsing one long provider line without holding it (docs/runtimes.md#process-model): its bytes are
 * fed in pieces as they arrive; every JSON string in it longer than `LONG_STRING_BYTES` is decoded
 * straight from the bytes into a string of its own, the rest of the line (its "skeleton", with a
 * placeholder for each long string) is kept as bytes and parsed by `JSON.parse` at the end. A long
 * string is kept only up to its first `keepBytes` bytes and more (the rest is still checked, then
 * dropped): nothing that reads a provider string uses more (events keep 32 KiB, a result at most
 * 8 MiB, see `keepBytes` in the provider worker), so the line costs its skeleton plus what is kept,
 * never its whole size in bytes, then again as a string, then again as parsed values.
 *
 * Offers `LongLine`: `push(bytes)` for each piece of the line in order (pieces are copied where kept),
 * `end()` → the parsed value, or `NOT_JSON` when the line is not JSON or nests too deep (line-depth.ts); throws
 * `ServerFsError("AGENT_PROVIDER_ERROR")` when the line is not valid UTF-8 (even in a dropped part).
 */
import { ServerFsError } from "../../shared/errors.ts";
import { decodeStrict } from "../../shared/utf8.ts";
import { nestsTooDeep } from "./line-depth.ts";

/** What a line that does not parse as JSON yields. */
export const NOT_JSON: unique symbol = Symbol("not JSON");

/** A string past this many raw bytes is decoded on its own rather than kept in the skeleton. */
export const LONG_STRING_BYTES = 65_536;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** A long string's bytes are decoded this many at a time. */
const DECODE_BATCH = 65_536;

/** The one-letter escapes, by the byte after the backslash: `"` `\\` `/` `b` `f` `n` `r` `t`. */
const SIMPLE_ESCAPES = new Map<number, number>([
  [0x22, 0x22],
  [0x5c, 0x5c],
  [0x2f, 0x2f],
  [0x62, 0x08],
  [0x66, 0x0c],
  [0x6e, 0x0a],
  [0x72, 0x0d],
  [0x74, 0x09],
]);

export const notUtf8 = (): ServerFsError => new ServerFsError("AGENT_PROVIDER_ERROR", "provider sent a line that is not valid UTF-8");

function hexValue(b: number): number {
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  const lower = b | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

/**
 * One long JSON string's content (after its opening quote), decoded as its bytes arrive. Raw bytes
 * and escapes (as UTF-8) go into one buffer that is decoded a batch at a time, so the string is built
 * from few large pieces; only a lone surrogate escape, which has no UTF-8 form, is a piece of its own.
 */
class LongString {
  private readonly pieces: string[] = [];
  /** UTF-8 bytes turned into pieces so far (kept or not). */
  private decoded = 0;
  private readonly buffer = new Uint8Array(DECODE_BATCH);
  private length = 0;
  /** -1 outside an escape, 0 just after its backslash, 1–4 hex digits of a `\u` escape read. */
  private escapeState = -1;
  private escapeUnit = 0;
  /** A high surrogate escape waiting for its low half, else -1. */
  private high = -1;
  private readonly decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  /** Set when the content breaks JSON; the caller stops reading it as a string. */
  malformed = false;
  /** Set when the content is not valid UTF-8. */
  invalid = false;
  closed = false;

  constructor(private readonly keepBytes: number) {}

  /** Reads content from `bytes[i..]`; returns where it stopped: past the closing quote, at a malformed byte, or the end. */
  feed(bytes: Uint8Array, i: number): number {
    const n = bytes.length;
    while (i < n) {
      if (this.escapeState >= 0) {
        i = this.feedEscape(bytes, i);
        if (this.malformed) return i;
        continue;
      }
      const start = i;
      while (i < n) {
        const b = bytes[i]!;
        if (b === QUOTE || b === BACKSLASH || b < 0x20) break;
        i++;
      }
      if (i > start) {
        this.endHigh();
        this.append(bytes.subarray(start, i));
      }
      if (i === n) return n;
      const b = bytes[i]!;
      if (b < 0x20) {
        this.malformed = true;
        return i;
      }
      i++;
      if (b === QUOTE) {
        this.endHigh();
        this.flush(true);
        this.closed = !this.malformed;
        return i;
      }
      this.escapeState = 0;
    }
    return n;
  }

  private feedEscape(bytes: Uint8Array, i: number): number {
    const b = bytes[i]!;
    if (this.escapeState === 0) {
      if (b === 0x75) {
        this.escapeState = 1;
        this.escapeUnit = 0;
        return i + 1;
      }
      const unit = SIMPLE_ESCAPES.get(b);
      if (unit === undefined) {
        this.malformed = true;
        return i;
      }
      this.escapeState = -1;
      this.escaped(unit);
      return i + 1;
    }
    const h = hexValue(b);
    if (h < 0) {
      this.malformed = true;
      return i;
    }
    this.escapeUnit = this.escapeUnit * 16 + h;
    if (++this.escapeState === 5) {
      this.escapeState = -1;
      this.escaped(this.escapeUnit);
    }
    return i + 1;
  }

  private escaped(unit: number): void {
    const isLow = unit >= 0xdc00 && unit <= 0xdfff;
    if (this.high >= 0 && isLow) {
      const codePoint = 0x10000 + ((this.high - 0xd800) << 10) + (unit - 0xdc00);
      this.high = -1;
      this.appendCodePoint(codePoint);
      return;
    }
    this.endHigh();
    if (unit >= 0xd800 && unit <= 0xdbff) this.high = unit;
    else if (isLow) this.lone(unit);
    else this.appendCodePoint(unit);
  }

  private endHigh(): void {
    if (this.high < 0) return;
    this.lone(this.high);
    this.high = -1;
  }

  /** A lone surrogate: its own piece (3 bytes once encoded, as the replacement character). */
  private lone(unit: number): void {
    this.flush(true);
    this.keep(String.fromCharCode(unit), 3);
  }

  private appendCodePoint(cp: number): void {
    if (this.length + 4 > this.buffer.length) this.flush(false);
    const buf = this.buffer;
    if (cp < 0x80) buf[this.length++] = cp;
    else if (cp < 0x800) {
      buf[this.length++] = 0xc0 | (cp >> 6);
      buf[this.length++] = 0x80 | (cp & 0x3f);
    } else if (cp < 0x10000) {
      buf[this.length++] = 0xe0 | (cp >> 12);
      buf[this.length++] = 0x80 | ((cp >> 6) & 0x3f);
      buf[this.length++] = 0x80 | (cp & 0x3f);
    } else {
      buf[this.length++] = 0xf0 | (cp >> 18);
      buf[this.length++] = 0x80 | ((cp >> 12) & 0x3f);
      buf[this.length++] = 0x80 | ((cp >> 6) & 0x3f);
      buf[this.length++] = 0x80 | (cp & 0x3f);
    }
  }

  private append(run: Uint8Array): void {
    for (let at = 0; at < run.length; ) {
      if (this.length === this.buffer.length) this.flush(false);
      const take = Math.min(run.length - at, this.buffer.length - this.length);
      this.buffer.set(run.subarray(at, at + take), this.length);
      this.length += take;
      at += take;
    }
  }

  /** Decodes the buffer; `final` where no character may go on past it. */
  private flush(final: boolean): void {
    if (this.invalid) return;
    let text: string;
    try {
      text = this.decoder.decode(this.buffer.subarray(0, this.length), { stream: !final });
    } catch {
      this.invalid = true;
      this.malformed = true;
      return;
    }
    this.keep(text, this.length);
    this.length = 0;
  }

  /**
   * A decoded batch may hold back up to 3 bytes of a character cut by the batch, so keeping stops
   * only past `keepBytes + 3`: a cut string is always over `keepBytes` bytes.
   */
  private keep(text: string, bytes: number): void {
    if (this.decoded <= this.keepBytes + 3 && text !== "") this.pieces.push(text);
    this.decoded += bytes;
  }

  value(): string {
    return this.pieces.join("");
  }

  /** The string will not be read on (the line broke JSON or ended): what is buffered is still checked for UTF-8. */
  abandon(): void {
    this.flush(true);
  }
}

/** Replaces each placeholder (as a value or a key, at any depth) by its long string. */
function restore(value: unknown, longs: ReadonlyMap<string, string>): unknown {
  if (typeof value === "string") return longs.get(value) ?? value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = restore(value[i], longs);
    return value;
  }
  if (typeof value === "object" && value !== null) {
    const object = value as Record<string, unknown>;
    for (const key of Object.keys(object)) {
      const inner = restore(object[key], longs);
      const longKey = longs.get(key);
      if (longKey !== undefined) delete object[key];
      Object.defineProperty(object, longKey ?? key, { value: inner, enumerable: true, writable: true, configurable: true });
    }
  }
  return value;
}

/** One line's parse; `push` its pieces in order, then `end()` once. */
export class LongLine {
  private readonly skeleton: Uint8Array[] = [];
  /** The content so far of a string not (yet) long, while inside one. */
  private short: Uint8Array[] | null = null;
  private shortBytes = 0;
  private shortEscaped = false;
  private long: LongString | null = null;
  private readonly longs = new Map<string, string>();
  private readonly nonce = crypto.randomUUID();
  /** The line already broke JSON: the rest is only checked for UTF-8. */
  private broken = false;
  private invalid = false;
  private readonly validator = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

  constructor(private readonly keepBytes: number) {}

  push(bytes: Uint8Array): void {
    let i = 0;
    const n = bytes.length;
    while (i < n && !this.broken) {
      if (this.long) {
        i = this.feedLong(bytes, i);
      } else if (this.short === null) {
        const q = bytes.indexOf(QUOTE, i);
        const end = q < 0 ? n : q + 1;
        this.skeleton.push(bytes.slice(i, end));
        if (q >= 0) {
          this.short = [];
          this.shortBytes = 0;
          this.shortEscaped = false;
        }
        i = end;
      } else {
        i = this.feedShort(bytes, i);
      }
    }
    if (this.broken && i < n) this.validate(bytes.subarray(i), true);
  }

  /** Inside a string not yet long: up to its closing quote, or until it turns long. */
  private feedShort(bytes: Uint8Array, i: number): number {
    const n = bytes.length;
    let j = i;
    let escaped = this.shortEscaped;
    for (; j < n; j++) {
      const b = bytes[j]!;
      if (escaped) escaped = false;
      else if (b === BACKSLASH) escaped = true;
      else if (b === QUOTE) break;
    }
    if (this.shortBytes + (j - i) > LONG_STRING_BYTES) {
      // turns long: its content so far goes to a decoder of its own, from the start
      const long = new LongString(this.keepBytes);
      for (const piece of this.short!) if (!long.malformed) long.feed(piece, 0);
      if (long.malformed) {
        this.breakOff(long);
        return i;
      }
      this.short = null;
      this.long = long;
      return this.feedLong(bytes, i);
    }
    this.shortEscaped = escaped;
    this.short!.push(bytes.slice(i, j));
    this.shortBytes += j - i;
    if (j === n) return n;
    for (const piece of this.short!) this.skeleton.push(piece);
    this.skeleton.push(bytes.slice(j, j + 1));
    this.short = null;
    return j + 1;
  }

  private feedLong(bytes: Uint8Array, i: number): number {
    const long = this.long!;
    const next = long.feed(bytes, i);
    if (long.malformed) {
      this.breakOff(long);
      return next;
    }
    if (long.closed) {
      const placeholder = `${this.nonce}:${this.longs.size}`;
      this.longs.set(placeholder, long.value());
      this.skeleton.push(Buffer.from(`${placeholder}"`));
      this.long = null;
    }
    return next;
  }

  /** The line is not JSON: what was kept is checked for UTF-8 and dropped. */
  private breakOff(long: LongString | null): void {
    this.broken = true;
    long?.abandon();
    if (long?.invalid) this.invalid = true;
    const kept = this.short === null ? this.skeleton : [...this.skeleton, ...this.short];
    // streamed: the rest of the line is checked as its continuation
    this.validate(Buffer.concat(kept), true);
    this.long = null;
    this.short = null;
    this.skeleton.length = 0;
    this.longs.clear();
  }

  private validate(bytes: Uint8Array, stream: boolean): void {
    if (this.invalid) return;
    try {
      this.validator.decode(bytes, { stream });
    } catch {
      this.invalid = true;
    }
  }

  end(): unknown {
    // an unterminated string
    if (this.long !== null) this.breakOff(this.long);
    if (this.broken) {
      this.validate(new Uint8Array(0), false);
      if (this.invalid) throw notUtf8();
      return NOT_JSON;
    }
    if (this.short !== null) this.skeleton.push(...this.short);
    const text = decodeStrict(Buffer.concat(this.skeleton));
    this.skeleton.length = 0;
    if (text === null) throw notUtf8();
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return NOT_JSON;
    }
    // measured before `restore`, which recurses
    if (nestsTooDeep(value)) return NOT_JSON;
    return this.longs.size === 0 ? value : restore(value, this.longs);
  }
}
