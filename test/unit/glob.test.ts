import { describe, expect, test } from "bun:test";
import { globMatcher } from "../../src/shared/path/glob.ts";
import { cpuRatio, LINEAR_FOR_8X } from "../helpers/timing.ts";

const seg = (glob: string) => globMatcher(glob, { crossSlash: false });
const whole = (glob: string) => globMatcher(glob, { crossSlash: true });
const star = (glob: string) => globMatcher(glob, { crossSlash: false, globstar: true });

describe("glob matcher: whole-string, case-sensitive", () => {
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

describe("glob matcher: * and ?", () => {
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

describe("glob matcher: classes", () => {
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

describe("globstar (search_text path globs)", () => {
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
  test("a trailing ** after a segment needs at least one segment; a lone ** matches every path", () => {
    expect(star("docs/**")("docs")).toBe(false);
    expect(star("/**".slice(1))("a/b")).toBe(true);
    expect(star("a/**/**/b")("a/b")).toBe(true);
    expect(star("a/**/**")("a/x/y")).toBe(true);
  });
});

/**
 * The reading of docs/mcp-tools.md#hidden-reserved-and-denied-names the matcher had when it compiled globs to regular expressions, kept here as
 * the oracle the NFA is checked against on random globs and names (never in production code,
 * where a regex built from user input can backtrack for minutes).
 */
function oracle(glob: string, crossSlash: boolean): RegExp {
  const any = crossSlash ? "[\\s\\S]" : "[^/]";
  const lit = (c: string) => (/^[\\^$.*+?()[\]{}|/]$/.test(c) ? `\\${c}` : c);
  const inCls = (c: string) => (/^[\\\]^[-]$/.test(c) ? `\\${c}` : c);
  const chars = Array.from(glob);
  let out = "";
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    if (c === "*") {
      while (chars[i + 1] === "*") i++;
      out += `${any}*`;
    } else if (c === "?") out += any;
    else if (c === "[") {
      let j = i + 1;
      const negate = chars[j] === "!";
      if (negate) j++;
      let body = "";
      let closed = -1;
      for (let first = true; j < chars.length; first = false) {
        const d = chars[j]!;
        if (d === "]" && !first) {
          closed = j;
          break;
        }
        const hi = chars[j + 2];
        if (chars[j + 1] === "-" && hi !== undefined && hi !== "]") {
          if (d.codePointAt(0)! <= hi.codePointAt(0)!) body += `${inCls(d)}-${inCls(hi)}`;
          j += 3;
        } else {
          body += inCls(d);
          j++;
        }
      }
      if (closed === -1) out += "\\[";
      else {
        out += negate ? `[^${body}${crossSlash ? "" : "/"}]` : `[${body}]`;
        i = closed;
      }
    } else out += lit(c);
  }
  return new RegExp(`^${out}$`, "u");
}

describe("the matcher agrees with the regular-expression reading it replaced", () => {
  test("10,000 random globs and names from a small alphabet give the same answers", () => {
    let seed = 42;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const pick = (alphabet: string[], max: number) => Array.from({ length: rand(max + 1) }, () => alphabet[rand(alphabet.length)]).join("");
    const globChars = ["a", "b", "/", "*", "*", "?", "[", "]", "!", "-", "😀", "."];
    const nameChars = ["a", "b", "/", "-", "]", "!", "😀", "."];
    for (let i = 0; i < 10_000; i++) {
      const glob = pick(globChars, 8);
      const name = pick(nameChars, 8);
      const crossSlash = rand(2) === 0;
      const expected = oracle(glob, crossSlash).test(name);
      if (globMatcher(glob, { crossSlash })(name) !== expected)
        throw new Error(`${JSON.stringify(glob)} ${crossSlash} ${JSON.stringify(name)}: expected ${expected}`);
    }
  });
});

describe("matching time is linear in the name, whatever the pattern", () => {
  const name = "a".repeat(200);
  const adversarial = [`${"*a".repeat(60)}*b`, `${"*?".repeat(60)}*b`, `${"*[a-z]".repeat(60)}*b`, `${"a*".repeat(100)}[!a]`, `*${"a?*".repeat(50)}b`];
  /**
   * How much more CPU `m` takes for the name eight times as long: about 8 for a linear matcher,
   * measured in this run (a backtracking matcher takes minutes on the short name already, and the
   * test's timeout ends it).
   */
  const growth = (m: (name: string) => boolean, short: string, long: string) =>
    cpuRatio(
      () => m(long),
      () => m(short),
      { rounds: 5 },
    );
  for (const glob of adversarial) {
    test(`a 200-character name against ${glob.slice(0, 12)}… answers, and eight times the name takes at most about eight times as long`, async () => {
      for (const crossSlash of [false, true]) {
        const m = globMatcher(glob, { crossSlash });
        expect(m(name)).toBe(false);
        expect(m(`${name}b`)).toBe(true);
        expect(await growth(m, name, name.repeat(8))).toBeLessThan(LINEAR_FOR_8X);
      }
    });
  }
  test("a path glob of many ** and stars against a deep 200-character path answers, and scales linearly with the depth", async () => {
    const m = star(`${"**/*a*a*a*/".repeat(20)}**/x`);
    const path = `${"a/".repeat(99)}b`;
    expect(m(path)).toBe(false);
    expect(await growth(m, path, `${"a/".repeat(8 * 99)}b`)).toBeLessThan(LINEAR_FOR_8X);
  });
});
