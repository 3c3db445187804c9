import { describe, expect, test } from "bun:test";
import { boundaryAfter, boundaryBefore, cutUtf8, incompleteTailStart, safePrefixLength, tailUtf8 } from "../../src/shared/utf8.ts";

// "a€😀": a (1 byte) at 0, € (3 bytes) at 1..3, 😀 (4 bytes) at 4..7
const bytes = Buffer.from("a€😀", "utf8");

describe("character boundaries: the one place a UTF-8 cut is decided", () => {
  test("boundaryBefore steps back to the start of the character a cut crosses; boundaryAfter forward past it", () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8].map((at) => boundaryBefore(bytes, at))).toEqual([0, 1, 1, 1, 4, 4, 4, 4, 8]);
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8].map((at) => boundaryAfter(bytes, at))).toEqual([0, 1, 4, 4, 4, 8, 8, 8, 8]);
    expect(safePrefixLength(bytes, 6)).toBe(4);
    expect(safePrefixLength(bytes, 100)).toBe(8);
  });

  test("cutUtf8 and tailUtf8 never split a character", () => {
    expect(cutUtf8("a€😀", 3)).toEqual({ text: "a", truncated: true });
    expect(tailUtf8("a€😀", 6)).toEqual({ text: "😀", truncated: true });
    expect(tailUtf8("a€😀", 8)).toEqual({ text: "a€😀", truncated: false });
  });

  test("incompleteTailStart finds a character cut at the end, and only a valid beginning of one", () => {
    expect(incompleteTailStart(bytes)).toBeNull();
    expect(incompleteTailStart(bytes.subarray(0, 6))).toBe(4);
    expect(incompleteTailStart(bytes.subarray(0, 2))).toBe(1);
    // a lone continuation byte, a byte that starts nothing, and a surrogate's lead pair are defects, not cuts
    expect(incompleteTailStart(Uint8Array.of(0x61, 0x80))).toBeNull();
    expect(incompleteTailStart(Uint8Array.of(0x61, 0xff))).toBeNull();
    expect(incompleteTailStart(Uint8Array.of(0xed, 0xa0))).toBeNull();
  });
});
