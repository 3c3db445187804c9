import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { CanonicalJsonError, canonicalJson, sha256Hex } from "../../src/shared/canonical-json.ts";

describe("canonical JSON", () => {
  test("object keys are sorted ascending at every depth, with no whitespace", () => {
    const value = { b: 1, a: { z: [3, { y: true, x: null }], m: "s" }, A: false };
    expect(canonicalJson(value)).toBe('{"A":false,"a":{"m":"s","z":[3,{"x":null,"y":true}]},"b":1}');
  });

  test("array order is kept", () => {
    expect(canonicalJson(["b", "a", 2, 1])).toBe('["b","a",2,1]');
  });

  test("strings escape only quote, backslash and U+0000–U+001F; other characters are written as is", () => {
    const s = 'q"b\\n\n\t\u0000\u001f\u007f é€😀/';
    expect(canonicalJson(s)).toBe('"q\\"b\\\\n\\n\\t\\u0000\\u001f\u007f é€😀/"');
    expect(canonicalJson({ [s]: s })).toBe(`{${JSON.stringify(s)}:${JSON.stringify(s)}}`);
  });

  test("safe integers, booleans and null are written as JSON writes them", () => {
    expect(canonicalJson([0, -0, -7, Number.MAX_SAFE_INTEGER, true, false, null])).toBe(`[0,0,-7,${Number.MAX_SAFE_INTEGER},true,false,null]`);
  });

  test.each([
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["-Infinity", Number.NEGATIVE_INFINITY],
    ["a fraction", 1.5],
    ["an unsafe integer", Number.MAX_SAFE_INTEGER + 1],
    ["undefined", undefined],
    ["a bigint", 1n],
    ["a function", () => 1],
    ["a symbol", Symbol("s")],
    ["a Date", new Date(0)],
    ["a Map", new Map()],
  ])("%s is an error, also nested", (_name, bad) => {
    expect(() => canonicalJson(bad)).toThrow(CanonicalJsonError);
    expect(() => canonicalJson({ ok: 1, deep: [{ bad }] })).toThrow(CanonicalJsonError);
  });

  test("an array hole is an error like undefined", () => {
    // biome-ignore lint/suspicious/noSparseArray: the hole is the point of the test
    expect(() => canonicalJson([1, , 3])).toThrow(CanonicalJsonError);
  });

  test("a cycle is an error; a shared (non-cyclic) reference is fine", () => {
    const shared = { k: 1 };
    expect(canonicalJson({ a: shared, b: shared })).toBe('{"a":{"k":1},"b":{"k":1}}');
    const cyclic: Record<string, unknown> = {};
    cyclic["self"] = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow(CanonicalJsonError);
  });

  test("an object without a prototype counts as a plain object", () => {
    const o = Object.create(null) as Record<string, unknown>;
    o["b"] = 1;
    o["a"] = 2;
    expect(canonicalJson(o)).toBe('{"a":2,"b":1}');
  });
});

describe("sha256", () => {
  test("is the lowercase hex SHA-256 of the UTF-8 bytes", () => {
    expect(sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const text = "é€😀";
    const expected = createHash("sha256").update(Buffer.from(text, "utf8")).digest("hex");
    expect(sha256Hex(text)).toBe(expected);
    expect(sha256Hex(new Uint8Array(Buffer.from(text, "utf8")))).toBe(expected);
    expect(sha256Hex(text)).toMatch(/^[0-9a-f]{64}$/);
  });
});
