/**
 * Decoding one JSON string straight from its bytes as they arrive (for long-line.ts, which hands it
 * the strings too long to keep in a line's skeleton): escapes, surrogate pairs and strict UTF-8 as
 * `JSON.parse` would, keeping only the first `keepBytes` bytes and more of the text while checking
 * all of it. Offers `JsonStringDecoder` and the two bytes that end a run of plain content, `QUOTE`
 * and `BACKSLASH`.
 */

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
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
export class JsonStringDecoder {
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
