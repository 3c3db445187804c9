import { describe, expect, test } from "bun:test";
import { NOT_JSON, readJsonLines } from "../../src/workers/providers/line-reader.ts";

/** A stream that delivers `bytes` cut at the given offsets (each chunk a fresh array). */
function streamOf(bytes: Uint8Array, cuts: number[]): ReadableStream<Uint8Array> {
  const points = [...new Set([0, ...cuts.filter((c) => c > 0 && c < bytes.length), bytes.length])].sort((a, b) => a - b);
  let i = 0;
  return new ReadableStream({
    pull(controller) {
      if (i + 1 >= points.length) return controller.close();
      controller.enqueue(bytes.slice(points[i]!, points[i + 1]!));
      i++;
    },
  });
}

async function readAll(bytes: Uint8Array, cuts: number[], keepBytes?: number): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const line of readJsonLines(streamOf(bytes, cuts), { keepBytes })) out.push(line);
  return out;
}

/** A small seeded generator, so a failure replays. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const PIECES = ["a", "é", "€", "😀", '"', "\\", "\n", "\u0001", "\u001f", "/", "\ud800", "\udc00", "x".repeat(50), "<wide ünïcödé>"];

function longString(rnd: () => number, units: number): string {
  let s = "";
  while (s.length < units) s += PIECES[Math.floor(rnd() * PIECES.length)]!;
  return s;
}

const encode = (s: string): Uint8Array => new TextEncoder().encode(s);
const cutsFor = (rnd: () => number, length: number, n: number): number[] => Array.from({ length: n }, () => Math.floor(rnd() * length));

describe("readJsonLines: long lines parse as JSON.parse would", () => {
  test("values with long strings (escapes, surrogates, multibyte) at any depth, cut into chunks anywhere", async () => {
    for (let seed = 1; seed <= 12; seed++) {
      const rnd = random(seed);
      const value = {
        type: "final",
        text: longString(rnd, 70_000 + Math.floor(rnd() * 200_000)),
        nested: [1, "short", { deep: longString(rnd, 100_000), n: -1.5e3, t: true, z: null }],
        [longString(rnd, 66_000)]: "long key",
      };
      // JSON.stringify escapes lone surrogates; a raw one would not be UTF-8
      const line = `${JSON.stringify(value)}\n{"type":"after"}\n`;
      const bytes = encode(line);
      const got = await readAll(bytes, cutsFor(rnd, bytes.length, 1 + Math.floor(rnd() * 40)));
      expect(got).toEqual([JSON.parse(JSON.stringify(value)), { type: "after" }]);
    }
  });

  test("a long line whose JSON breaks (raw control byte, bad escape, unterminated) is NOT_JSON and the next line still reads", async () => {
    const long = "y".repeat(100_000);
    for (const broken of [`{"t":"${long}\u0001"}`, `{"t":"${long}\\q"}`, `{"t":"${long}\\u12G4"}`, `{"t":"${long}`, `{"t":"${long}"`, `["${long}" "x"]`]) {
      expect(await readAll(encode(`${broken}\n[1]\n`), [70_000, 100_003])).toEqual([NOT_JSON, [1]]);
    }
  });

  test("invalid UTF-8 anywhere in a long line throws AGENT_PROVIDER_ERROR, even where the line is also not JSON", async () => {
    const long = encode(`{"t":"${"z".repeat(100_000)}`);
    const tails = [
      [0xff, 0x22, 0x7d],
      [0xc3, 0x22, 0x7d],
      [0x22, 0x2c, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d],
      [0x01, 0xff],
      [0xff, 0x5c, 0x71, 0x22, 0x7d],
      [0xff, 0x01],
      [0xff, 0x5c],
      [0xc3],
    ];
    for (const tail of tails) {
      const bytes = new Uint8Array([...long, ...tail, 0x0a]);
      await expect(readAll(bytes, [50_000, long.length])).rejects.toMatchObject({
        code: "AGENT_PROVIDER_ERROR",
        message: "provider sent a line that is not valid UTF-8",
      });
    }
  });
});

describe("readJsonLines: nesting", () => {
  /** `value` wrapped in `depth` arrays (each alternate one an object), as one line. */
  const nested = (depth: number, value: string) => {
    let line = value;
    for (let d = 0; d < depth; d++) line = d % 2 === 0 ? `[${line}]` : `{"k":${line}}`;
    return line;
  };
  const long = JSON.stringify("x".repeat(70_000));

  test("a line nested 100,000 deep around a long string is NOT_JSON, like any malformed line, and the next line still reads", async () => {
    const bytes = encode(`${nested(100_000, long)}
{"type":"after"}
`);
    expect(await readAll(bytes, [1_000, 80_000, 150_000])).toEqual([NOT_JSON, { type: "after" }]);
  });

  test("a short line nested past 512 is NOT_JSON too; 512 deep parses, long string or not", async () => {
    expect(
      await readAll(
        encode(`${nested(20_000, "1")}
${nested(513, "1")}
${nested(513, long)}
`),
        [],
      ),
    ).toEqual([NOT_JSON, NOT_JSON, NOT_JSON]);
    const [short, withLong] = await readAll(
      encode(`${nested(512, "1")}
${nested(512, long)}
`),
      [],
    );
    expect(short).toEqual(JSON.parse(nested(512, "1")));
    expect(withLong).toEqual(JSON.parse(nested(512, long)));
  });
});

describe("readJsonLines: keepBytes", () => {
  test("a long string over keepBytes is kept as a prefix just over keepBytes; shorter ones whole", async () => {
    const rnd = random(99);
    const text = longString(rnd, 400_000);
    const short = longString(rnd, 90_000);
    const bytes = encode(`${JSON.stringify({ text, short })}\n`);
    const keep = 200_000;
    const [got] = (await readAll(bytes, cutsFor(rnd, bytes.length, 30), keep)) as [{ text: string; short: string }];
    expect(got.short).toBe(short);
    expect(text.startsWith(got.text)).toBe(true);
    expect(Buffer.byteLength(got.text)).toBeGreaterThan(keep);
    expect(got.text.length).toBeLessThan(text.length);
  });
});

describe("readJsonLines: short lines", () => {
  test("empty and CR-only lines are skipped, CRLF ends a line, a final line without newline counts", async () => {
    expect(await readAll(encode('\n\r\n{"a":1}\r\nnope\n[2]'), [3, 9])).toEqual([{ a: 1 }, NOT_JSON, [2]]);
  });

  test("a line over the cap fails with AGENT_PROVIDER_ERROR", async () => {
    const lines = readJsonLines(streamOf(encode(`"${"x".repeat(5000)}"\n`), [1000, 3000]), { cap: 4096 });
    await expect(lines.next()).rejects.toMatchObject({ code: "AGENT_PROVIDER_ERROR", message: "provider sent a line over the line limit" });
  });
});
