/**
 * Parsing one long provider line without holding it (docs/runtimes.md#process-model): its bytes are
 * fed in pieces as they arrive; every JSON string in it longer than `LONG_STRING_BYTES` is decoded
 * straight from the bytes into a string of its own (json-string-decoder.ts), the rest of the line (its "skeleton", with a
 * placeholder for each long string) is kept as bytes and parsed by `JSON.parse` at the end. A long
 * string is kept only up to its first `keepBytes` bytes and more (the rest is still checked, then
 * dropped): nothing that reads a provider string uses more (events keep 32 KiB, a result at most
 * 8 MiB, see `keepBytes` in the provider worker), so the line costs its skeleton plus what is kept,
 * never its whole size in bytes, then again as a string, then again as parsed values.
 *
 * Offers `LongLine`: `push(bytes)` for each piece of the line in order (pieces are copied where kept),
 * `end()` → the parsed value, or `NOT_JSON` when the line is not JSON or nests too deep (line-value.ts); throws
 * `ServerFsError("AGENT_PROVIDER_ERROR")` when the line is not valid UTF-8 (even in a dropped part).
 */
import { BACKSLASH, JsonStringDecoder, QUOTE } from "./json-string-decoder.ts";
import { NOT_JSON, notUtf8, parseLine } from "./line-value.ts";

/** A string past this many raw bytes is decoded on its own rather than kept in the skeleton. */
export const LONG_STRING_BYTES = 65_536;

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
  private long: JsonStringDecoder | null = null;
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
      const long = new JsonStringDecoder(this.keepBytes);
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
  private breakOff(long: JsonStringDecoder | null): void {
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
    const bytes = Buffer.concat(this.skeleton);
    this.skeleton.length = 0;
    // the depth is measured there, before `restore`, which recurses
    const value = parseLine(bytes);
    return value === NOT_JSON || this.longs.size === 0 ? value : restore(value, this.longs);
  }
}
