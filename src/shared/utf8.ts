/** Strict UTF-8 helpers shared by reads, search, edits and the result spool. */

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

/**
 * The length of the longest prefix of `bytes[0, max)` that ends on a character boundary, assuming
 * `bytes` is valid UTF-8 from its start.
 */
export function safePrefixLength(bytes: Uint8Array, max: number): number {
  if (bytes.length <= max) return bytes.length;
  let end = max;
  // step back over continuation bytes to the lead byte of the character that crosses `max`
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return end;
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
  let start = bytes.length - max;
  // skip continuation bytes of the character cut at the front
  while (start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start++;
  return { text: bytes.subarray(start).toString("utf8"), truncated: true };
}
