/**
 * Finding a query of ASCII regardless of case in a file's raw bytes, for search_text with
 * `case_sensitive = false` (docs/mcp-tools.md#search_text), without validating or decoding a file that
 * does not hold it.
 *
 * Under simple case folding the only characters outside ASCII that fold to an ASCII letter are U+212A
 * KELVIN SIGN (k) and U+017F LATIN SMALL LETTER LONG S (s). So in a file holding neither of the ones
 * the query folds with (its traps), the query matches exactly the runs of ASCII bytes equal to it but
 * for the case of letters, and a Horspool scan over the bytes finds them: it looks at about one byte
 * in the query's length where a RegExp over the decoded text looks at every character.
 */

const lower = (b: number): number => (b >= 0x41 && b <= 0x5a ? b + 0x20 : b);

/** The traps of a query of ASCII, UTF-8 encoded; null for a query outside ASCII. */
export function foldTraps(query: string): Buffer[] | null {
  if (!/^[\x00-\x7f]*$/.test(query)) return null;
  const traps: Buffer[] = [];
  if (/k/i.test(query)) traps.push(Buffer.from("\u212A", "utf8"));
  if (/s/i.test(query)) traps.push(Buffer.from("\u017F", "utf8"));
  return traps;
}

/** Finds a query of ASCII in bytes, ASCII letters compared regardless of case. */
export class AsciiFoldFinder {
  private readonly needle: Uint8Array;
  /** How far the window may move when its last byte (folded) is the index. */
  private readonly shift = new Int32Array(256);
  private readonly folded = new Uint8Array(256);

  constructor(query: string) {
    this.needle = Uint8Array.from(Buffer.from(query, "latin1"), lower);
    const m = this.needle.length;
    for (let b = 0; b < 256; b++) this.folded[b] = lower(b);
    this.shift.fill(m);
    for (let i = 0; i < m - 1; i++) {
      const b = this.needle[i]!;
      this.shift[b] = m - 1 - i;
      if (b >= 0x61 && b <= 0x7a) this.shift[b - 0x20] = m - 1 - i;
    }
  }

  /** The offset of the first match at or after `from`, or -1. */
  find(bytes: Uint8Array, from: number): number {
    const { needle, shift, folded } = this;
    const last = needle.length - 1;
    for (let pos = from; pos + last < bytes.length; pos += shift[bytes[pos + last]!]!) {
      let j = last;
      while (j >= 0 && folded[bytes[pos + j]!] === needle[j]) j--;
      if (j < 0) return pos;
    }
    return -1;
  }
}
