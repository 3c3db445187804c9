/**
 * Strict UTF-8 helpers shared by reads, search, edits, provider output and the result spool, and the
 * one place that knows where a character starts: every cut of UTF-8 bytes goes through
 * `boundaryBefore`, `boundaryAfter` or `incompleteTailStart`.
 */

const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
export const encoder = new TextEncoder();

export const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** Decodes strictly (no replacement characters, overlongs and surrogates refused); null if invalid. */
export function decodeStrict(bytes: Uint8Array): string | null {
  try {
    return strict.decode(bytes);
  } catch {
    return null;
  }
}

export const byteLength = (s: string): number => Buffer.byteLength(s, "utf8");

export const hasBom = (b: Uint8Array): boolean => b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf;

/** A continuation byte (`10xxxxxx`): never where a character starts. */
const isContinuation = (byte: number): boolean => (byte & 0xc0) === 0x80;

/** The last character boundary at or before `at`: back over the continuation bytes of the character that crosses it. */
export function boundaryBefore(bytes: Uint8Array, at: number): number {
  let end = at;
  while (end > 0 && isContinuation(bytes[end]!)) end--;
  return end;
}

/** The first character boundary at or after `at`: past the continuation bytes of a character cut at the front. */
export function boundaryAfter(bytes: Uint8Array, at: number): number {
  let start = at;
  while (start < bytes.length && isContinuation(bytes[start]!)) start++;
  return start;
}

/**
 * The length of the longest prefix of `bytes[0, max)` that ends on a character boundary, assuming
 * `bytes` is valid UTF-8 from its start.
 */
export function safePrefixLength(bytes: Uint8Array, max: number): number {
  return bytes.length <= max ? bytes.length : boundaryBefore(bytes, max);
}

/** The lead byte's sequence length per RFC 3629, 0 for a byte that cannot start a character. */
function sequenceLength(lead: number): number {
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

/** The second byte's narrower ranges that exclude overlongs, surrogates and code points past U+10FFFF. */
function secondByteFits(lead: number, second: number): boolean {
  if (lead === 0xe0) return second >= 0xa0;
  if (lead === 0xed) return second <= 0x9f;
  if (lead === 0xf0) return second >= 0x90;
  if (lead === 0xf4) return second <= 0x8f;
  return true;
}

/**
 * Where a trailing incomplete (but so far valid) character starts, or null when the bytes do not
 * end in one.
 */
export function incompleteTailStart(bytes: Uint8Array): number | null {
  let p = bytes.length - 1;
  while (p >= 0 && bytes.length - 1 - p < 3 && isContinuation(bytes[p]!)) p--;
  if (p < 0) return null;
  const lead = bytes[p]!;
  const have = bytes.length - p;
  const need = sequenceLength(lead);
  if (need === 0 || have >= need) return null;
  if (have >= 2 && !secondByteFits(lead, bytes[p + 1]!)) return null;
  return p;
}

/**
 * The longest UTF-8-safe prefix of `text` of at most `max` bytes. Only the first `max + 1` code
 * units are encoded (each is at least one byte), so cutting a huge text costs the cut, not the text.
 */
export function cutUtf8(text: string, max: number): { text: string; truncated: boolean } {
  // a code unit is at most 3 bytes (a pair is 4 for 2), so a text this short always fits
  if (text.length * 3 <= max) return { text, truncated: false };
  const head = text.length > max + 1 ? text.slice(0, max + 1) : text;
  const bytes = Buffer.from(head, "utf8");
  if (head === text && bytes.length <= max) return { text, truncated: false };
  return { text: bytes.subarray(0, safePrefixLength(bytes, max)).toString("utf8"), truncated: true };
}

/** The longest UTF-8-safe suffix of `text` of at most `max` bytes (the end of an output is what tells). */
export function tailUtf8(text: string, max: number): { text: string; truncated: boolean } {
  // as in cutUtf8: only the last `max + 1` code units can end up in the tail
  const bytes = Buffer.from(text.length > max + 1 ? text.slice(-(max + 1)) : text, "utf8");
  if (bytes.length <= max) return { text, truncated: false };
  return { text: bytes.subarray(boundaryAfter(bytes, bytes.length - max)).toString("utf8"), truncated: true };
}
