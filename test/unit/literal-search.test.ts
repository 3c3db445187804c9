/**
 * search_text's content rules (docs/mcp-tools.md#search_text) hold on every path of `LiteralSearch`:
 * random files mixing ASCII, text outside ASCII (the Kelvin sign and long s among it), bytes that are
 * not UTF-8, CR, long lines and a BOM are searched and compared with the rules read literally, line by
 * line: a line that decodes strictly and holds the query (code points exactly, or as a JavaScript
 * RegExp with the i and u flags) is one hit, cut to 2,048 bytes. When case folds, a query of ASCII
 * takes the byte path unless the file holds a Kelvin sign or long s it folds with (`foldTraps`), the
 * others the decoded one.
 */
import { describe, expect, test } from "bun:test";
import { BOM, cutUtf8, decodeStrict, hasBom } from "../../src/shared/utf8.ts";
import { foldTraps } from "../../src/workers/walk/ascii-fold.ts";
import { type LineHit, LiteralSearch } from "../../src/workers/walk/literal-search.ts";
import { newStopFlag } from "../../src/workers/walk/stop-flag.ts";
import { seededRandom } from "../helpers/random.ts";

const literalPattern = (s: string) => s.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&");

function expected(content: Buffer, query: string, caseSensitive: boolean): LineHit[] {
  if (content.includes(0)) return [];
  const folded = new RegExp(literalPattern(query), "iu");
  const body = hasBom(content) ? content.subarray(3) : content;
  const hits: LineHit[] = [];
  let line = 0;
  for (let from = 0; from <= body.length; line++) {
    const nl = body.indexOf(0x0a, from);
    const end = nl === -1 ? body.length : nl;
    const text = decodeStrict(body.subarray(from, end));
    if (text !== null && (caseSensitive ? text.includes(query) : folded.test(text))) {
      const cut = cutUtf8(text, 2048);
      hits.push({ line: line + 1, text_truncated: cut.truncated, text: cut.text });
    }
    if (nl === -1) break;
    from = nl + 1;
  }
  return hits;
}

const PIECES = ["token", "TOKEN", "ToKeN", "tok", "en", "x", " ", "\r", "\n", "\n", "é", "É", "\u212A", "\u017F", "ss", "S", "k", "€", "🙂", "[.*]", "ab"];
const RAW = [Buffer.from([0xff]), Buffer.from([0xc3]), Buffer.from([0xe2, 0x82])];

function randomFile(rnd: () => number): Buffer {
  const parts: Buffer[] = rnd() < 0.2 ? [BOM] : [];
  const n = Math.floor(rnd() * 60);
  for (let i = 0; i < n; i++) {
    const r = rnd();
    if (r < 0.05) parts.push(RAW[Math.floor(rnd() * RAW.length)]!);
    else if (r < 0.07) parts.push(Buffer.from("token".repeat(500)));
    else parts.push(Buffer.from(PIECES[Math.floor(rnd() * PIECES.length)]!));
  }
  return Buffer.concat(parts);
}

const QUERIES = ["token", "TOKEN", "oke", "x token", "[.*]", "en\rx", "ss", "k", "tokens", "É", "🙂", "\u212A"];

describe("LiteralSearch follows the content rules on every path", () => {
  test("a query of ASCII is kept off the byte path only by the characters outside ASCII it folds with", () => {
    const traps = (q: string) => foldTraps(q)?.map((b) => b.toString("utf8"));
    expect(traps("handle")).toEqual([]);
    expect(traps("resolveWorkspaceToken")).toEqual(["\u212A", "\u017F"]);
    expect(traps("KEY")).toEqual(["\u212A"]);
    expect(traps("É")).toBeUndefined();
  });

  test("random files, every query, both cases", () => {
    const stop = newStopFlag();
    const queries = [...QUERIES, "handle", "HaNdLe", "e", "E", "ab", "b\r"];
    for (let seed = 1; seed <= 400; seed++) {
      const rnd = seededRandom(seed);
      let content = randomFile(rnd);
      if (rnd() < 0.3) content = Buffer.concat([content, Buffer.from(rnd() < 0.5 ? "handle\nHANDLE é" : "xhAnDlex\r\n")]);
      for (const query of queries) {
        for (const caseSensitive of [true, false]) {
          const got = new LiteralSearch(query, caseSensitive).scan(content, 1000, stop);
          const want = expected(content, query, caseSensitive);
          if (JSON.stringify(got) !== JSON.stringify(want)) {
            throw new Error(`seed ${seed}, query ${JSON.stringify(query)}, caseSensitive ${caseSensitive}: ${JSON.stringify(got)} != ${JSON.stringify(want)}`);
          }
        }
      }
    }
  });

  test("the byte path stops at max hits and skips a file holding NUL", () => {
    const stop = newStopFlag();
    const search = new LiteralSearch("handle", false);
    expect(search.scan(Buffer.from("HANDLE\nx\nhandle\nHandle\n"), 2, stop).map((h) => h.line)).toEqual([1, 3]);
    expect(search.scan(Buffer.from("HANDLE\n\0"), 10, stop)).toEqual([]);
    expect(search.scan(Buffer.concat([BOM, Buffer.from("hAndle")]), 10, stop)).toEqual([{ line: 1, text_truncated: false, text: "hAndle" }]);
  });
});
