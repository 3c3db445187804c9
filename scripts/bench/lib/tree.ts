/**
 * The generated tree both servers are measured on: 50,000 regular files in 1,110 nested
 * directories (10 × 10 × 10 leaves of 50 files), most of them small source-like files, a few
 * hundred larger text files carrying the search needle, and a sprinkling of `*compose*.yml` files
 * for the find pattern. Content comes from a seeded generator, so every run sees the same bytes
 * and the expected match counts are known before anything is measured.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const FANOUT = 10;
const DEPTH = 3;
const FILES_PER_LEAF = 50;
/** One leaf in this many gets a compose file in place of a filler file. */
const COMPOSE_EVERY = 2;
/** Leaves whose index mod 10 is below this get the larger text files (3 of every 10). */
const TEXT_LEAVES_PER_10 = 3;
const TEXT_FILES_PER_LEAF = 1;

export const SEARCH_NEEDLE = "resolveWorkspaceToken";
export const FIND_PATTERN = "*compose*.yml";

export interface GeneratedTree {
  root: string;
  files: number;
  directories: number;
  /** The larger text files that may hold the needle. */
  textFiles: number;
  bytes: number;
  /** Regular files whose basename matches FIND_PATTERN. */
  findMatches: number;
  /** Lines holding SEARCH_NEEDLE. */
  searchHits: number;
  /** A small text file for per-call reads, relative to the root. */
  smallFile: string;
}

/** mulberry32: tiny, fast, and good enough to vary generated text deterministically. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = [
  "config", "handle", "request", "session", "buffer", "stream", "parse", "render", "index", "token",
  "state", "cache", "entry", "result", "value", "option", "client", "server", "record", "batch",
  "worker", "queue", "event", "schema", "policy", "path", "limit", "offset", "window", "frame",
];

const pick = <T>(rnd: () => number, xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
const ident = (rnd: () => number) => pick(rnd, WORDS) + pick(rnd, WORDS).replace(/^./, (c) => c.toUpperCase());

/** One line of plausible TypeScript, 40–110 bytes. */
function codeLine(rnd: () => number): string {
  switch (Math.floor(rnd() * 5)) {
    case 0:
      return `export function ${ident(rnd)}(${ident(rnd)}: string, ${ident(rnd)}: number): boolean {`;
    case 1:
      return `  const ${ident(rnd)} = await ${ident(rnd)}.${ident(rnd)}(${ident(rnd)}, ${Math.floor(rnd() * 1000)});`;
    case 2:
      return `  if (${ident(rnd)} === undefined) throw new Error("${pick(rnd, WORDS)} ${pick(rnd, WORDS)} missing");`;
    case 3:
      return `  // ${pick(rnd, WORDS)} the ${pick(rnd, WORDS)} before the ${pick(rnd, WORDS)} is ${pick(rnd, WORDS)}ed`;
    default:
      return `  return { ${ident(rnd)}, ${ident(rnd)}: ${ident(rnd)}.${pick(rnd, WORDS)} };`;
  }
}

/** A filler file: 3–8 lines. */
const fillerText = (rnd: () => number) =>
  `${Array.from({ length: 3 + Math.floor(rnd() * 6) }, () => codeLine(rnd)).join("\n")}\n`;

/** A larger text file of 120–720 lines (≈ 8–50 KB); about one line in 250 holds the needle. */
function searchableText(rnd: () => number): { text: string; hits: number } {
  const lines: string[] = [];
  let hits = 0;
  const count = 120 + Math.floor(rnd() * 600);
  for (let i = 0; i < count; i++) {
    if (rnd() < 1 / 250) {
      lines.push(`  const ${ident(rnd)} = ${SEARCH_NEEDLE}(${ident(rnd)}, ${ident(rnd)});`);
      hits++;
    } else lines.push(codeLine(rnd));
  }
  return { text: `${lines.join("\n")}\n`, hits };
}

const EXTENSIONS = [".ts", ".ts", ".ts", ".js", ".json", ".md", ".txt"];

function leafPaths(): string[][] {
  let paths: string[][] = [[]];
  for (let d = 0; d < DEPTH; d++) {
    paths = paths.flatMap((p) => Array.from({ length: FANOUT }, (_, i) => [...p, `${["pkg", "mod", "part"][d]}${i}`]));
  }
  return paths;
}

export function generateTree(root: string, seed = 7): GeneratedTree {
  const rnd = random(seed);
  const tree: GeneratedTree = {
    root,
    files: 0,
    directories: 0,
    textFiles: 0,
    bytes: 0,
    findMatches: 0,
    searchHits: 0,
    smallFile: "",
  };
  const made = new Set<string>();
  const write = (rel: string, text: string) => {
    writeFileSync(join(root, rel), text);
    tree.files++;
    tree.bytes += Buffer.byteLength(text);
  };
  leafPaths().forEach((segments, leaf) => {
    for (let i = 1; i <= segments.length; i++) {
      const dir = segments.slice(0, i).join("/");
      if (!made.has(dir)) {
        mkdirSync(join(root, dir));
        made.add(dir);
      }
    }
    const dir = segments.join("/");
    let slots = FILES_PER_LEAF;
    if (leaf === 0) {
      // The per-call read target takes one filler slot, so the tree holds exactly 50,000 files.
      tree.smallFile = "README.md";
      write(tree.smallFile, `# Bench tree\n\nGenerated for scripts/bench/fs.ts.\n${fillerText(rnd)}`);
      slots--;
    }
    if (leaf % 10 < TEXT_LEAVES_PER_10) {
      for (let t = 0; t < TEXT_FILES_PER_LEAF; t++, slots--) {
        const { text, hits } = searchableText(rnd);
        write(`${dir}/${ident(rnd)}-${leaf}-${t}.ts`, text);
        tree.textFiles++;
        tree.searchHits += hits;
      }
    }
    if (leaf % COMPOSE_EVERY === 0) {
      write(`${dir}/docker-compose.${leaf}.yml`, `services:\n  app${leaf}:\n    image: example/app:${leaf}\n`);
      tree.findMatches++;
      slots--;
    }
    for (let f = 0; f < slots; f++) {
      write(`${dir}/${ident(rnd)}_${f}${pick(rnd, EXTENSIONS)}`, fillerText(rnd));
    }
  });
  tree.directories = made.size;
  return tree;
}
