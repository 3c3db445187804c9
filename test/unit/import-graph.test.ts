/**
 * The layers of src/ point one way (docs/architecture.md#layers): src/main → src/workers →
 * src/shared, never upward; inside src/main the two fronts, src/main/bridge and src/main/mcp, do not
 * import each other (what both need lives lower down; src/main/operator may use both); and no module
 * imports itself back through any chain of imports.
 *
 * Every file's imports are read from its text: `import … from`, `export … from`, bare `import "…"`,
 * `import("…")`, `new URL("…", import.meta.url)`, and `workerUrl("name")` (src/shared/self-command.ts),
 * through which every worker thread is started, as an edge to src/workers/<name>.ts. Type-only
 * imports count: a type is a dependency too, and Bun's own scanner, which drops them, only checks
 * that this one misses nothing.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");

/** Bottom to top: a file may import its own layer or a lower one. */
const LAYERS = ["src/shared/", "src/workers/", "src/main/"];
/** The two fronts of src/main; neither imports the other. */
const FRONTS = ["src/main/bridge/", "src/main/mcp/"];

interface Scan {
  /** Module specifiers, as written. */
  imports: string[];
  /** Worker entry names given to `workerUrl`. */
  workers: string[];
  /** `import(…)` of something other than a string: nothing here could check where it leads. */
  opaque: number;
}

/** Where a `/` starts a regular expression rather than a division. */
const REGEX_AFTER = /(?:^|[(,=:[!&|?{};+\-*%<>~^]|\b(?:return|typeof|case|do|else|in|of|void|yield|await|delete|throw|new))\s*$/;

/**
 * The source with its comments blanked and each string (or template without substitutions)
 * replaced by `"#n"`, n its index in `literals`; a template's substitutions stay code. So an
 * `import` inside a comment or a string is never taken for one, and the patterns below see only
 * code.
 */
function mask(src: string): { code: string; literals: string[] } {
  const literals: string[] = [];
  let code = "";
  let i = 0;
  let depth = 0;
  /** The brace depth at which each open `${…}` substitution ends. */
  const substitutions: number[] = [];
  const literal = (text: string): void => {
    code += `"#${literals.length}"`;
    literals.push(text);
  };
  /** Reads a template from `i` (past its "`" or a substitution's "}") to its end or its next "${". */
  const template = (): void => {
    while (i < src.length) {
      const c = src[i]!;
      if (c === "\\") i += 2;
      else if (c === "`") {
        code += "`";
        i++;
        return;
      } else if (c === "$" && src[i + 1] === "{") {
        code += "${";
        i += 2;
        substitutions.push(depth++);
        return;
      } else i++;
    }
  };
  while (i < src.length) {
    const c = src[i]!;
    const next = src[i + 1];
    if (c === "/" && next === "/") {
      while (i < src.length && src[i] !== "\n") i++;
    } else if (c === "/" && next === "*") {
      const end = src.indexOf("*/", i + 2);
      i = end === -1 ? src.length : end + 2;
      code += " ";
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < src.length && src[j] !== c) j += src[j] === "\\" ? 2 : 1;
      literal(src.slice(i + 1, j));
      i = j + 1;
    } else if (c === "`") {
      const end = /(?<!\\)(?:\\\\)*(`|\$\{)/.exec(src.slice(i + 1));
      if (end?.[1] === "`") {
        literal(src.slice(i + 1, i + 1 + end.index + end[0].length - 1));
        i += 1 + end.index + end[0].length;
      } else {
        code += "`";
        i++;
        template();
      }
    } else if (c === "/" && REGEX_AFTER.test(code.slice(-16))) {
      let inClass = false;
      for (i++; i < src.length && (inClass || src[i] !== "/"); i++) {
        if (src[i] === "\\") i++;
        else if (src[i] === "[") inClass = true;
        else if (src[i] === "]") inClass = false;
      }
      for (i++; i < src.length && /[a-z]/.test(src[i]!); i++);
      code += "/r/";
    } else if (c === "}" && substitutions.at(-1) === depth - 1) {
      substitutions.pop();
      depth--;
      code += "}";
      i++;
      template();
    } else {
      if (c === "{") depth++;
      else if (c === "}") depth--;
      code += c;
      i++;
    }
  }
  return { code, literals };
}

function scan(src: string): Scan {
  const { code, literals } = mask(src);
  const all = (re: RegExp): string[] => [...code.matchAll(re)].map((m) => literals[Number(m[1])]!);
  const dynamic = [...code.matchAll(/\bimport\s*\(\s*(?:"#(\d+)"\s*[,)])?/g)];
  return {
    imports: [
      ...all(/\bfrom\s*"#(\d+)"/g),
      ...all(/\bimport\s*"#(\d+)"/g),
      ...dynamic.filter((m) => m[1] !== undefined).map((m) => literals[Number(m[1])]!),
      ...all(/\bnew\s+URL\s*\(\s*"#(\d+)"\s*,\s*import\.meta\.url\s*\)/g),
    ],
    workers: all(/\bworkerUrl\s*\(\s*"#(\d+)"\s*\)/g),
    opaque: dynamic.filter((m) => m[1] === undefined).length,
  };
}

type Graph = Map<string, string[]>;

/** Each file's imports of files under src/ (paths from the repository's root); packages are left out. */
function graphOf(sources: Map<string, string>): { graph: Graph; opaque: string[] } {
  const graph: Graph = new Map();
  const opaque: string[] = [];
  for (const [file, src] of sources) {
    const found = scan(src);
    const deps = found.imports.filter((s) => s.startsWith(".")).map((s) => relative(ROOT, join(ROOT, dirname(file), s)));
    deps.push(...found.workers.map((name) => `src/workers/${name}.ts`));
    graph.set(
      file,
      [...new Set(deps)].filter((d) => d.startsWith("src/")),
    );
    if (found.opaque > 0) opaque.push(`${file}: import() of a computed specifier`);
  }
  return { graph, opaque };
}

const layerOf = (file: string): number => LAYERS.findIndex((l) => file.startsWith(l));
const frontOf = (file: string): string | undefined => FRONTS.find((f) => file.startsWith(f));

function upwardImports(graph: Graph): string[] {
  const out: string[] = [];
  for (const [file, deps] of graph) {
    if (layerOf(file) === -1) out.push(`${file} is in no layer (${LAYERS.join(", ")})`);
    for (const d of deps) if (layerOf(d) > layerOf(file)) out.push(`${file} imports upward: ${d}`);
  }
  return out;
}

function crossFrontImports(graph: Graph): string[] {
  const out: string[] = [];
  for (const [file, deps] of graph) {
    const front = frontOf(file);
    for (const d of deps) {
      const other = frontOf(d);
      if (front !== undefined && other !== undefined && other !== front) out.push(`${file} imports the other front: ${d}`);
    }
  }
  return out;
}

/** Every set of files tied by import cycles, each named by its shortest cycle through one of them: `a → b → a`. */
function cycles(graph: Graph): string[] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component = new Set<string>();
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.add(w);
    } while (w !== v);
    if (component.size === 1 && !graph.get(v)?.includes(v)) return;
    const cycle = shortestCycle(graph, v, component);
    const more = component.size > cycle.length - 1 ? ` (one of the cycles that tie ${component.size} modules)` : "";
    out.push(`import cycle: ${cycle.join(" → ")}${more}`);
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

/** The shortest path from `start` back to itself inside its component (breadth first). */
function shortestCycle(graph: Graph, start: string, component: Set<string>): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let k = 0; k < queue.length; k++) {
    const v = queue[k]!;
    for (const w of graph.get(v) ?? []) {
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(cameFrom.get(path[0]!)!);
        return [...path, start];
      }
      if (component.has(w) && !cameFrom.has(w)) {
        cameFrom.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start];
}

/** Each source file's text, a `#!` line blanked (it is not JavaScript, and Bun's scanner refuses it). */
const SOURCES = new Map(
  [...new Bun.Glob("src/**/*.{ts,tsx,js,mjs,cjs}").scanSync({ cwd: ROOT })].sort().map((f) => [f, readFileSync(join(ROOT, f), "utf8").replace(/^#!.*/, "")]),
);
const { graph: GRAPH, opaque: OPAQUE } = graphOf(SOURCES);

describe("the import graph of src/", () => {
  test("the scanner sees every import Bun's transpiler sees, and no import() of a computed specifier", () => {
    const transpiler = new Bun.Transpiler({ loader: "ts" });
    const missed: string[] = [];
    for (const [file, src] of SOURCES) {
      const seen = new Set(scan(src).imports);
      for (const i of transpiler.scanImports(src)) if (!seen.has(i.path)) missed.push(`${file}: ${i.path}`);
    }
    expect(missed).toEqual([]);
    expect(OPAQUE).toEqual([]);
    expect(GRAPH.size).toBeGreaterThan(100);
  });

  test("every worker started by name is a file and an entry point of the compiled build", () => {
    const build = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts["build"]!;
    const entries = build.split(/\s+/).filter((w) => w.startsWith("src/"));
    const workers = [...SOURCES.values()].flatMap((src) => scan(src).workers.map((name) => `src/workers/${name}.ts`));
    expect(workers.length).toBeGreaterThan(0);
    expect(workers.filter((w) => !entries.includes(w))).toEqual([]);
    expect(entries.filter((e) => !existsSync(join(ROOT, e)))).toEqual([]);
  });

  test("no file imports a layer above its own (main → workers → shared)", () => {
    expect(upwardImports(GRAPH)).toEqual([]);
  });

  test("src/main/bridge and src/main/mcp do not import each other", () => {
    expect(crossFrontImports(GRAPH)).toEqual([]);
  });

  test("no import cycle", () => {
    expect(cycles(GRAPH)).toEqual([]);
  });
});

describe("the checks catch what they are for", () => {
  const fixture = new Map([
    ["src/shared/a.ts", 'import { b } from "../workers/b.ts";\n// import { x } from "../main/x.ts";\nconst s = "import y from \'../main/y.ts\'";'],
    ["src/workers/b.ts", 'export type { C } from "../main/mcp/c.ts";\nconst w = startWorker(workerUrl("walk-worker"), lost);'],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the fixture is source text holding a template
    ["src/main/mcp/c.ts", ['import type { D } from "../bridge/d.ts";', 'const t = `${`import("../x.ts")`}`;', "const r = /[\"'`]/g;"].join("\n")],
    ["src/main/bridge/d.ts", 'export * from "./e.ts";\nconst m = await import(name);'],
    ["src/main/bridge/e.ts", 'import "./d.ts";'],
    ["src/main/operator/f.ts", 'import { c } from "../mcp/c.ts";\nimport { d } from "../bridge/d.ts";'],
  ]);
  const { graph, opaque } = graphOf(fixture);

  test("comments and strings are not imports; type-only, re-exports, bare imports and workers are", () => {
    expect(graph.get("src/shared/a.ts")).toEqual(["src/workers/b.ts"]);
    expect(graph.get("src/workers/b.ts")).toEqual(["src/main/mcp/c.ts", "src/workers/walk-worker.ts"]);
    expect(graph.get("src/main/mcp/c.ts")).toEqual(["src/main/bridge/d.ts"]);
    expect(opaque).toEqual(["src/main/bridge/d.ts: import() of a computed specifier"]);
  });

  test("an upward import, a cross-front import and a cycle are each named", () => {
    expect(upwardImports(graph)).toEqual(["src/shared/a.ts imports upward: src/workers/b.ts", "src/workers/b.ts imports upward: src/main/mcp/c.ts"]);
    expect(crossFrontImports(graph)).toEqual(["src/main/mcp/c.ts imports the other front: src/main/bridge/d.ts"]);
    expect(cycles(graph)).toEqual(["import cycle: src/main/bridge/d.ts → src/main/bridge/e.ts → src/main/bridge/d.ts"]);
  });
});
