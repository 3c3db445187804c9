import { describe, expect, test } from "bun:test";
import { cutErrorMessage, Redactor } from "../../src/shared/redact.ts";
import { byteLength, decodeStrict } from "../../src/shared/utf8.ts";
import { cpuRatio, LINEAR_FOR_8X } from "../helpers/timing.ts";

const ROOT = "/home/u/repo";
const REAL = "/srv/real/repo";
const r = new Redactor([ROOT, REAL]);
const OUT = "<outside-workdir>";

describe("dropped keys", () => {
  test("every provider-native id key is removed at any depth, in objects inside arrays too", () => {
    const keys = ["native_session_id", "native_turn_id", "thread_id", "turn_id", "session_id", "threadId", "turnId", "sessionId"];
    const deep = Object.fromEntries(keys.map((k) => [k, "secret-id"]));
    const input = { ...deep, keep: 1, a: { b: [{ ...deep, keep: true }], c: { d: { ...deep, e: null } } } };
    const out = r.redactValue(input);
    expect(out).toEqual({ keep: 1, a: { b: [{ keep: true }], c: { d: { e: null } } } });
    expect(JSON.stringify(out)).not.toContain("secret-id");
  });
});

describe("path keys", () => {
  test.each([
    ["path", `${ROOT}/src/a.ts`, "src/a.ts"],
    ["cwd", ROOT, "."],
    ["cwd", `${ROOT}/`, "."],
    ["relative_cwd", `${ROOT}/src/..`, "."],
    ["file_path", `${ROOT}//src/./lib/../b.ts`, "src/b.ts"],
    ["host_path", `${REAL}/lib/x.ts`, "lib/x.ts"],
    ["grantRoot", REAL, "."],
    ["path", `${ROOT}/my file.txt`, "my file.txt"],
    ["path", `${ROOT}/../repo2/x`, OUT],
    ["path", `${ROOT}/../../../etc/passwd`, OUT],
    ["path", `${ROOT}2/x`, OUT],
    ["path", "/home/u", OUT],
    ["grantRoot", "/", OUT],
    ["cwd", "/etc", OUT],
    ["relative_cwd", "src/lib", "src/lib"],
    ["relative_cwd", "", ""],
    ["path", "../x", "../x"],
  ])("%s %j → %j", (key, value, expected) => {
    expect(r.redactValue({ [key]: value })).toEqual({ [key]: expected });
  });

  test("path-list keys redact each element; relative elements are kept", () => {
    const list = [ROOT, `${ROOT}/docs`, `${REAL}/build/../out`, "/tmp", `${ROOT}/../x`, "rel/dir"];
    const expected = [".", "docs", "out", OUT, OUT, "rel/dir"];
    for (const key of ["read", "write", "readableRoots", "writableRoots"]) {
      expect(r.redactValue({ [key]: list })).toEqual({ [key]: expected });
    }
  });

  test("path keys apply at any depth", () => {
    expect(r.redactValue({ item: { changes: [{ path: `${ROOT}/a.ts` }, { path: "/opt/b.ts" }] } })).toEqual({
      item: { changes: [{ path: "a.ts" }, { path: OUT }] },
    });
  });

  test("non-string values under path keys are kept or recursed", () => {
    expect(r.redactValue({ path: null, cwd: 3, read: [1, { path: ROOT }] })).toEqual({ path: null, cwd: 3, read: [1, { path: "." }] });
  });
});

describe("other strings", () => {
  test.each([
    [`${ROOT}/a.ts`, "a.ts"],
    [ROOT, "."],
    [`${REAL}/x/../y`, "y"],
    ["/usr/bin/git", OUT],
    [`${ROOT}-old/a`, OUT],
    ["/", OUT],
  ])("a lone absolute path %j → %j", (value, expected) => {
    expect(r.redactValue({ blocked_path: value, paths: [value] })).toEqual({ blocked_path: expected, paths: [expected] });
  });

  test("a string with whitespace is free text, not a path", () => {
    expect(r.redactValue({ command: `cat ${ROOT}/a.ts /etc/hosts` })).toEqual({ command: "cat <workdir>/a.ts /etc/hosts" });
  });

  test("object keys that hold host paths are redacted like values", () => {
    expect(r.redactValue({ [`${ROOT}/a.ts`]: { status: "M" }, [`note ${ROOT}`]: 1 })).toEqual({ "a.ts": { status: "M" }, "note <workdir>": 1 });
  });

  test("numbers, booleans and null pass unchanged; a __proto__ key stays an own key", () => {
    const input = JSON.parse(`{"n":1.5,"b":false,"z":null,"__proto__":{"cwd":"${ROOT}"}}`);
    const out = r.redactValue(input) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(JSON.stringify(out)).toBe('{"n":1.5,"b":false,"z":null,"__proto__":{"cwd":"."}}');
  });
});

describe("free text", () => {
  test.each([
    [`cd ${ROOT} && ls`, "cd <workdir> && ls"],
    [`root is ${ROOT}`, "root is <workdir>"],
    [`(${ROOT})`, "(<workdir>)"],
    [`"${ROOT}",'${ROOT}';`, `"<workdir>",'<workdir>';`],
    [`see ${ROOT}/src/a.ts:12 now`, "see <workdir>/src/a.ts:12 now"],
    [`[${ROOT}/a/../b]`, "[<workdir>/b]"],
    [`${ROOT}/`, "<workdir>"],
    [`x ${ROOT}/../secret/y z`, `x ${OUT} z`],
    [`x ${ROOT}/a/../../repo2 z`, `x ${OUT} z`],
    [`sibling ${ROOT}2/x and ${ROOT}-old`, `sibling ${OUT} and ${OUT}`],
    [`end ${ROOT}.`, `end ${OUT}`],
    [`--dir=${ROOT}/x`, "--dir=<workdir>/x"],
    [`PATH:${ROOT}/bin`, "PATH:<workdir>/bin"],
    [`a ${ROOT}/x b ${REAL}/y`, "a <workdir>/x b <workdir>/y"],
    [`{"cwd":"${ROOT}"}`, '{"cwd":"<workdir>"}'],
    [`Datei ${ROOT}/ä.txt|`, "Datei <workdir>/ä.txt|"],
    [`${ROOT}/a\n${ROOT}/b`, "<workdir>/a\n<workdir>/b"],
  ])("%j → %j", (text, expected) => {
    expect(r.redactText(text)).toBe(expected);
  });

  test.each([
    [`/mnt${ROOT}/x`],
    [`x${ROOT}`],
    [`~${ROOT}`],
    [`.${ROOT}`],
    [`_${ROOT}`],
    [`-${ROOT}`],
    [`/${ROOT}/x`],
    ["no paths at all"],
    ["/home/u/rep is not the root"],
  ])("an occurrence preceded by a path character is not a root: %j is unchanged", (text) => {
    expect(r.redactText(text)).toBe(text);
  });

  test("the longest root wins where one root extends another", () => {
    const nested = new Redactor(["/w/r", "/w/r-real"]);
    expect(nested.redactText("at /w/r-real/x and /w/r/y and /w/r-other")).toBe(`at <workdir>/x and <workdir>/y and ${OUT}`);
    expect(nested.redactPath("/w/r-real/x")).toBe("x");
  });

  test("a redactor without roots leaves text alone and treats every absolute path as outside", () => {
    const none = new Redactor([]);
    expect(none.redactText(`see ${ROOT}`)).toBe(`see ${ROOT}`);
    expect(none.redactValue({ cwd: ROOT })).toEqual({ cwd: OUT });
  });

  test("configured roots are normalized (a trailing slash does not defeat matching)", () => {
    expect(new Redactor([`${ROOT}/`]).redactText(`in ${ROOT}/a`)).toBe("in <workdir>/a");
  });

  test("an 8 MiB final text full of roots and other paths is redacted in linear time", async () => {
    const unit = `word ${ROOT}/src/file.ts, /usr/lib/x ${ROOT}2/y x${ROOT} (${REAL})\n`;
    const text = unit.repeat(Math.ceil((8 * 1024 * 1024) / unit.length));
    const out = r.redactText(text);
    expect(out.startsWith(`word <workdir>/src/file.ts, /usr/lib/x ${OUT} x${ROOT} (<workdir>)\n`)).toBe(true);
    expect(out.includes(`${ROOT}/`)).toBe(false);
    // Linear: eight times the text costs about eight times the CPU (a quadratic scan, 64 times),
    // both measured in this run (on 2 MiB and its eighth, which tells the two apart as well).
    const quarter = text.slice(0, text.length / 4);
    const eighth = quarter.slice(0, quarter.length / 8);
    expect(
      await cpuRatio(
        () => r.redactText(quarter),
        () => r.redactText(eighth),
      ),
    ).toBeLessThan(LINEAR_FOR_8X);
    const long = r.redactText(`${ROOT}/${"a".repeat(8 * 1024 * 1024)}`);
    expect(long.length).toBe("<workdir>/".length + 8 * 1024 * 1024);
    // CPU work, not a wait: three 8 MiB texts take seconds of a core a loaded machine shares
  }, 30_000);
});

describe("error_message", () => {
  test("is redacted, then cut to a UTF-8-safe prefix of at most 4,096 bytes", () => {
    const message = `failed in ${ROOT}/a.ts: ${"€".repeat(2000)}`;
    const cut = r.redactErrorMessage(message);
    expect(cut.startsWith("failed in <workdir>/a.ts: €")).toBe(true);
    expect(byteLength(cut)).toBeLessThanOrEqual(4096);
    expect(byteLength(cut)).toBeGreaterThan(4093);
    expect(decodeStrict(Buffer.from(cut, "utf8"))).toBe(cut);
    expect(cut.endsWith("€")).toBe(true);
  });

  test("a short message is unchanged by the cut; exactly 4,096 bytes is kept whole", () => {
    expect(cutErrorMessage("short")).toBe("short");
    const exact = "a".repeat(4096);
    expect(cutErrorMessage(exact)).toBe(exact);
    expect(cutErrorMessage(`${exact}b`)).toBe(exact);
    expect(cutErrorMessage(`${"a".repeat(4094)}😀`)).toBe("a".repeat(4094));
  });
});
