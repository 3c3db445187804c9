/**
 * The content side of search_text (docs/mcp-tools.md#search_text): a literal query against one whole file.
 * A file holding any NUL yields nothing (binary); the BOM is not part of line 1; a line that is not
 * valid UTF-8 yields nothing; each matching line yields one hit, its text cut to 2,048 bytes.
 *
 * Speed matters (most files do not match): matches are found in the file's bytes (or, when case
 * folds and the query could match outside ASCII, its decoded text) first, and only then is the line
 * around each match located and counted, so a non-matching line costs no allocation at all.
 */
import { isUtf8 } from "node:buffer";
import { cutUtf8, decodeStrict, hasBom, safePrefixLength } from "../../shared/utf8.ts";
import { AsciiFoldFinder, foldTraps } from "./ascii-fold.ts";
import { type StopFlag, throwIfStopped } from "./stop-flag.ts";

export interface LineHit {
  line: number;
  text_truncated: boolean;
  /** Last: the bulk of a hit (docs/mcp-tools.md#results-and-errors). */
  text: string;
}

const HIT_TEXT_MAX_BYTES = 2048;
const NL = 0x0a;

const escapeRegExp = (s: string) => s.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&");

function hitFromBytes(line: number, bytes: Buffer): LineHit {
  const cut = safePrefixLength(bytes, HIT_TEXT_MAX_BYTES);
  return { line, text_truncated: cut < bytes.length, text: bytes.toString("utf8", 0, cut) };
}

function hitFromText(line: number, text: string): LineHit {
  const cut = cutUtf8(text, HIT_TEXT_MAX_BYTES);
  return { line, text_truncated: cut.truncated, text: cut.text };
}

/** Counts `\n` bytes in `buf[from, to)`. */
function countLines(buf: Buffer, from: number, to: number): number {
  let n = 0;
  for (let i = buf.indexOf(NL, from); i !== -1 && i < to; i = buf.indexOf(NL, i + 1)) n++;
  return n;
}

/** Counts `\n` characters in `text[from, to)`. */
function countTextLines(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = text.indexOf("\n", from); i !== -1 && i < to; i = text.indexOf("\n", i + 1)) n++;
  return n;
}

export class LiteralSearch {
  /** UTF-8 bytes of the query (case-sensitive), or null when case folds. */
  private readonly needle: Buffer | null;
  private readonly folded: RegExp;
  private readonly foldedLine: RegExp;
  /** A folding query of ASCII, for the byte path, and the characters that keep a file off it (`ascii-fold.ts`). */
  private readonly asciiFolded: { finder: AsciiFoldFinder; traps: Buffer[] } | null;
  /** A query with a lone surrogate can never occur in strictly decoded text. */
  private readonly impossible: boolean;

  constructor(query: string, caseSensitive: boolean) {
    this.impossible = !query.isWellFormed();
    this.needle = caseSensitive ? Buffer.from(query, "utf8") : null;
    const traps = caseSensitive ? null : foldTraps(query);
    this.asciiFolded = traps ? { finder: new AsciiFoldFinder(query), traps } : null;
    this.folded = new RegExp(escapeRegExp(query), "giu");
    this.foldedLine = new RegExp(escapeRegExp(query), "iu");
  }

  /** At most `max` hits of one file's content, lines ascending; the slow path polls `stop`. */
  scan(content: Buffer, max: number, stop: StopFlag): LineHit[] {
    if (this.impossible || max <= 0) return [];
    const { needle, asciiFolded } = this;
    if (needle) return this.scanBytes(content, (from) => content.indexOf(needle, from), max);
    if (asciiFolded && !asciiFolded.traps.some((t) => content.includes(t))) {
      const { finder } = asciiFolded;
      return this.scanBytes(content, (from) => finder.find(content, from), max);
    }
    return this.scanFolded(content, max, stop);
  }

  /** The hits of matches found in the bytes: `find(from)` gives the offset of the next at or after `from`, or -1. */
  private scanBytes(content: Buffer, find: (from: number) => number, max: number): LineHit[] {
    const start = hasBom(content) ? 3 : 0;
    let pos = find(start);
    if (pos === -1 || content.indexOf(0) !== -1) return [];
    const hits: LineHit[] = [];
    let line = 1;
    let counted = start;
    while (pos !== -1 && hits.length < max) {
      const lineStart = pos > start ? Math.max(start, content.lastIndexOf(NL, pos - 1) + 1) : start;
      line += countLines(content, counted, lineStart);
      counted = lineStart;
      const nl = content.indexOf(NL, pos);
      const lineEnd = nl === -1 ? content.length : nl;
      const bytes = content.subarray(lineStart, lineEnd);
      if (isUtf8(bytes)) hits.push(hitFromBytes(line, bytes));
      if (nl === -1) break;
      pos = find(nl + 1);
    }
    return hits;
  }

  private scanFolded(content: Buffer, max: number, stop: StopFlag): LineHit[] {
    if (content.indexOf(0) !== -1) return [];
    // Validating first makes the fast lossy decoder exact.
    if (!isUtf8(content)) return this.scanFoldedLines(content, max, stop);
    const text = content.toString("utf8");
    const start = hasBom(content) ? 1 : 0;
    const re = this.folded;
    re.lastIndex = start;
    const hits: LineHit[] = [];
    let line = 1;
    let counted = start;
    for (let m = re.exec(text); m !== null && hits.length < max; m = re.exec(text)) {
      const pos = m.index;
      const lineStart = pos > start ? Math.max(start, text.lastIndexOf("\n", pos - 1) + 1) : start;
      line += countTextLines(text, counted, lineStart);
      counted = lineStart;
      const nl = text.indexOf("\n", pos);
      hits.push(hitFromText(line, text.slice(lineStart, nl === -1 ? text.length : nl)));
      if (nl === -1) break;
      re.lastIndex = nl + 1;
    }
    return hits;
  }

  /**
   * The slow path for a file that is not valid UTF-8 as a whole: line by line, invalid lines
   * skipped. Millions of short lines take seconds, so the stop flag is polled as it goes.
   */
  private scanFoldedLines(content: Buffer, max: number, stop: StopFlag): LineHit[] {
    const hits: LineHit[] = [];
    let line = 1;
    for (let lineStart = hasBom(content) ? 3 : 0; lineStart < content.length && hits.length < max; line++) {
      if ((line & 0xfff) === 0) throwIfStopped(stop);
      const nl = content.indexOf(NL, lineStart);
      const lineEnd = nl === -1 ? content.length : nl;
      const text = decodeStrict(content.subarray(lineStart, lineEnd));
      if (text !== null && this.foldedLine.test(text)) hits.push(hitFromText(line, text));
      lineStart = lineEnd + 1;
    }
    return hits;
  }
}
