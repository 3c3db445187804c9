import { describe, expect, test } from "bun:test";
import { compileGlob, globMatcher } from "../../src/shared/path/glob.ts";

const seg = (glob: string) => globMatcher(glob, { crossSlash: false });
const whole = (glob: string) => globMatcher(glob, { crossSlash: true });
const star = (glob: string) => globMatcher(glob, { crossSlash: false, globstar: true });

describe("§4.4 glob matcher: whole-string, case-sensitive", () => {
  test("a literal glob matches only the whole string, case-sensitively", () => {
    expect(seg("main.ts")("main.ts")).toBe(true);
    expect(seg("main.ts")("xmain.ts")).toBe(false);
    expect(seg("main.ts")("main.tsx")).toBe(false);
    expect(seg("main.ts")("Main.ts")).toBe(false);
  });
  test("regex metacharacters and a backslash are ordinary characters", () => {
    expect(seg("a.b")("axb")).toBe(false);
    expect(seg("a+b(c)|{d}$^")("a+b(c)|{d}$^")).toBe(true);
    expect(seg("a\\b")("a\\b")).toBe(true);
    expect(seg("a-b")("a-b")).toBe(true);
    expect(seg("x/y")("x/y")).toBe(true);
  });
});

describe("§4.4 glob matcher: * and ?", () => {
  test("* matches any run, including the empty one", () => {
    const m = seg("*compose*.yml");
    expect(m("docker-compose.yml")).toBe(true);
    expect(m("compose.yml")).toBe(true);
    expect(m("compose.yaml")).toBe(false);
  });
  test("? matches exactly one character, an astral character counting as one", () => {
    expect(seg("a?c")("abc")).toBe(true);
    expect(seg("a?c")("ac")).toBe(false);
    expect(seg("a?c")("abbc")).toBe(false);
    expect(seg("a?c")("a😀c")).toBe(true);
  });
  test("* and ? do not cross / in segment globs but do in whole-path globs", () => {
    expect(seg("a*z")("a/z")).toBe(false);
    expect(seg("a?z")("a/z")).toBe(false);
    expect(whole("a*z")("a/b/z")).toBe(true);
    expect(whole("a?z")("a/z")).toBe(true);
  });
});

describe("§4.4 glob matcher: classes", () => {
  test("[abc] and [a-z] match one character of the class", () => {
    expect(seg("file[12].txt")("file1.txt")).toBe(true);
    expect(seg("file[12].txt")("file3.txt")).toBe(false);
    expect(seg("[a-c]x")("bx")).toBe(true);
    expect(seg("[a-c]x")("dx")).toBe(false);
  });
  test("[!abc] is a negated class", () => {
    expect(seg("[!ab]x")("cx")).toBe(true);
    expect(seg("[!ab]x")("ax")).toBe(false);
    expect(seg("[!a-c]")("d")).toBe(true);
    expect(seg("[!a-c]")("b")).toBe(false);
  });
  test("an unmatched [ is a literal character", () => {
    expect(seg("a[b")("a[b")).toBe(true);
    expect(seg("a[b")("ab")).toBe(false);
    expect(seg("[")("[")).toBe(true);
  });
  test("] first in a class is a member; - at an edge is a member", () => {
    expect(seg("[]a]")("]")).toBe(true);
    expect(seg("[]a]")("a")).toBe(true);
    expect(seg("[a-]")("-")).toBe(true);
    expect(seg("[-a]")("-")).toBe(true);
    expect(seg("[a-]")("b")).toBe(false);
  });
  test("class members that are special in a regular expression stay literal", () => {
    expect(seg("[\\^]")("^")).toBe(true);
    expect(seg("[\\^]")("\\")).toBe(true);
    expect(seg("[^]")("^")).toBe(true);
    expect(seg("[.]")("x")).toBe(false);
  });
  test("a reversed range holds no character instead of failing to compile", () => {
    expect(() => seg("[z-a]")).not.toThrow();
    expect(seg("[z-a]")("m")).toBe(false);
    expect(seg("[z-ax]")("x")).toBe(true);
  });
  test("a range between astral characters works on code points", () => {
    expect(seg("[😀-😂]")("😁")).toBe(true);
    expect(seg("[😀-😂]")("😃")).toBe(false);
  });
});

describe("§5.4 globstar (search_text path globs)", () => {
  test("a ** segment matches zero or more segments", () => {
    const m = star("src/**/*.ts");
    expect(m("src/a.ts")).toBe(true);
    expect(m("src/x/y/a.ts")).toBe(true);
    expect(m("lib/a.ts")).toBe(false);
    expect(m("src/a.js")).toBe(false);
  });
  test("a leading **/ matches at any depth, a trailing /** everything below", () => {
    expect(star("**/*.md")("a.md")).toBe(true);
    expect(star("**/*.md")("x/y/a.md")).toBe(true);
    expect(star("docs/**")("docs/a/b.txt")).toBe(true);
    expect(star("docs/**")("other/a.txt")).toBe(false);
  });
  test("* and ? stay within one segment", () => {
    expect(star("src/*.ts")("src/a.ts")).toBe(true);
    expect(star("src/*.ts")("src/x/a.ts")).toBe(false);
    expect(star("src/?/a")("src/x/a")).toBe(true);
  });
  test("compiled globs are anchored unicode regular expressions", () => {
    const re = compileGlob("*.ts", { crossSlash: false });
    expect(re.flags).toContain("u");
    expect(re.source.startsWith("^")).toBe(true);
    expect(re.source.endsWith("$")).toBe(true);
  });
});
