/** Where a final text goes (docs/task-model.md#results): inline, spooled with a preview, or too large. */
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { classifyResult, resultPreview } from "../../src/shared/result-class.ts";
import { byteLength, encoder } from "../../src/shared/utf8.ts";

const utf8 = (text: string): Uint8Array => encoder.encode(text);

const sha256 = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");

describe("thresholds", () => {
  test.each([
    [262_144, "inline"],
    [262_145, "spool"],
    [8_388_608, "spool"],
    [8_388_609, "too_large"],
  ])("%d bytes of text is %s; an inline one carries its text and SHA-256, a spooled one its preview", (n, storage) => {
    const text = "a".repeat(n);
    const expected = { inline: { text, sha256: sha256(text) }, spool: { preview: text.slice(0, 65_536) }, too_large: {} }[storage as "inline"];
    expect(classifyResult(utf8(text))).toEqual({ storage: storage as "inline", size_bytes: n, ...expected } as never);
  });

  test("multi-byte text is measured in UTF-8 bytes, not characters", () => {
    expect(classifyResult(utf8("é".repeat(131_072))).storage).toBe("inline");
    expect(classifyResult(utf8(`${"é".repeat(131_072)}a`)).storage).toBe("spool");
    expect(classifyResult(utf8("€".repeat(87_382))).size_bytes).toBe(262_146);
  });

  test("a text within 256 KiB whose JSON string encoding is over 512 KiB is spooled", () => {
    // n quotes encode as 2n + 2 bytes: 262,143 of them are exactly 524,288
    expect(classifyResult(utf8('"'.repeat(262_143))).storage).toBe("inline");
    expect(classifyResult(utf8('"'.repeat(262_144))).storage).toBe("spool");
    expect(classifyResult(utf8("\\".repeat(262_144))).storage).toBe("spool");
    // a control character encodes as \u00XX: 6 bytes each
    const controls = "\u0001".repeat(200 * 1024);
    expect(classifyResult(utf8(controls))).toEqual({ storage: "spool", size_bytes: 204_800, preview: controls.slice(0, 65_536) });
    expect(classifyResult(utf8("\n".repeat(200 * 1024))).storage).toBe("inline");
  });

  test("the preview is the first 65,536 bytes cut back to the last complete character", () => {
    expect(resultPreview(utf8("short"))).toBe("short");
    expect(resultPreview(utf8("a".repeat(70_000)))).toBe("a".repeat(65_536));
    const euros = resultPreview(utf8("€".repeat(30_000)));
    expect(euros).toBe("€".repeat(21_845));
    expect(byteLength(euros)).toBe(65_535);
    const emoji = resultPreview(utf8(`ab${"😀".repeat(20_000)}`));
    expect(emoji).toBe(`ab${"😀".repeat(16_383)}`);
    expect(byteLength(emoji)).toBe(65_534);
    expect(resultPreview(utf8(`a${"€".repeat(21_845)}€`))).toBe(`a${"€".repeat(21_845)}`);
  });
});
