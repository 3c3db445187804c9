/**
 * The one glob matcher (docs/mcp-tools.md#hidden-reserved-and-denied-names): case-sensitive, whole-string; `*` any run, `?` one
 * character, `[abc]` / `[a-z]` / `[!abc]` classes, an unmatched `[` is literal. Deny globs,
 * `find_files.pattern` and `search_text.glob` all compile through here.
 *
 * Globs come from clients, so matching must cost time linear in the name whatever the pattern: a
 * regular expression built from `*a*a*a…` backtracks for minutes on a long name
 * (docs/reliability.md, "Hardening"). A glob compiles to a sequence of atoms run as an NFA: all live
 * positions advance together over the subject's code points (an astral character is one `?`), each
 * live position costs one step per code point and positions only move forward, so a name of n code
 * points costs O(n · min(n, atoms)) however the atoms are arranged.
 */

export interface GlobOptions {
  /** `*`, `?` and negated classes may match `/` (whole-path deny globs). */
  crossSlash: boolean;
  /** A whole `**` segment matches path segments (search_text globs): see `globstarMatcher`. */
  globstar?: boolean;
}

export type Matcher = (s: string) => boolean;

const SLASH = 0x2f;

/** One step of a sequence: it consumes exactly one element, or (a star) any run of admitted ones. */
interface Atom<E> {
  star: boolean;
  accepts(e: E): boolean;
}

/**
 * The sequence `atoms` as an NFA whose state is the set of positions (atoms consumed so far) the
 * elements read so far can reach. Its scratch arrays are reused by every call (calls never overlap).
 */
class Nfa<E> {
  private readonly m: number;
  private readonly stamp: Int32Array;
  private live: Int32Array;
  private moved: Int32Array;
  private gen = 0;

  constructor(private readonly atoms: readonly Atom<E>[]) {
    this.m = atoms.length;
    this.stamp = new Int32Array(this.m + 1);
    this.live = new Int32Array(this.m + 1);
    this.moved = new Int32Array(this.m + 1);
  }

  /** Adds position `p` (and, at a star, the one after it) to `into[0, count)`; returns the new count. */
  private reach(into: Int32Array, count: number, p: number): number {
    if (this.stamp[p] !== this.gen) {
      this.stamp[p] = this.gen;
      into[count++] = p;
    }
    // A star matches the empty run too. Adjacent stars are merged at compile time, so this never chains.
    if (p < this.m && this.atoms[p]!.star && this.stamp[p + 1] !== this.gen) {
      this.stamp[p + 1] = this.gen;
      into[count++] = p + 1;
    }
    return count;
  }

  /** Whether the atoms consume exactly the elements `next()` yields (undefined ends them). */
  matches(next: () => E | undefined): boolean {
    if (this.gen > 0x3fffffff) {
      this.stamp.fill(0);
      this.gen = 0;
    }
    this.gen++;
    let n = this.reach(this.live, 0, 0);
    for (let e = next(); e !== undefined; e = next()) {
      this.gen++;
      let k = 0;
      for (let j = 0; j < n; j++) {
        const p = this.live[j]!;
        if (p === this.m) continue;
        const atom = this.atoms[p]!;
        if (atom.accepts(e)) k = this.reach(this.moved, k, atom.star ? p : p + 1);
      }
      if (k === 0) return false;
      const swap = this.live;
      this.live = this.moved;
      this.moved = swap;
      n = k;
    }
    return this.stamp[this.m] === this.gen;
  }
}

const cp = (c: string) => c.codePointAt(0)!;

/** The class starting at `chars[start] === "["` as an atom, or null when no `]` closes it. */
function classAtom(chars: readonly string[], start: number, crossSlash: boolean): { atom: Atom<number>; end: number } | null {
  let i = start + 1;
  const negate = chars[i] === "!";
  if (negate) i++;
  const ranges: number[] = [];
  for (let first = true; i < chars.length; first = false) {
    const c = chars[i]!;
    if (c === "]" && !first) {
      const inClass = (x: number) => {
        for (let r = 0; r < ranges.length; r += 2) if (x >= ranges[r]! && x <= ranges[r + 1]!) return true;
        return false;
      };
      const accepts = negate ? (x: number) => !inClass(x) && (crossSlash || x !== SLASH) : inClass;
      return { atom: { star: false, accepts }, end: i };
    }
    const hi = chars[i + 2];
    if (chars[i + 1] === "-" && hi !== undefined && hi !== "]") {
      // A reversed range (`[z-a]`) holds no character rather than being a syntax error.
      if (cp(c) <= cp(hi)) ranges.push(cp(c), cp(hi));
      i += 3;
    } else {
      ranges.push(cp(c), cp(c));
      i++;
    }
  }
  return null;
}

/** The atoms of a glob without globstar, and whether they are literals and stars only. */
function compileRun(glob: string, crossSlash: boolean): { atoms: Atom<number>[]; simple: boolean } {
  const chars = Array.from(glob);
  const any = crossSlash ? () => true : (x: number) => x !== SLASH;
  const atoms: Atom<number>[] = [];
  let simple = true;
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    const cls = c === "[" ? classAtom(chars, i, crossSlash) : null;
    if (c === "*") {
      while (chars[i + 1] === "*") i++;
      atoms.push({ star: true, accepts: any });
    } else if (c === "?") {
      atoms.push({ star: false, accepts: any });
      simple = false;
    } else if (cls) {
      atoms.push(cls.atom);
      i = cls.end;
      simple = false;
    } else {
      const lit = cp(c);
      atoms.push({ star: false, accepts: (x) => x === lit });
    }
  }
  return { atoms, simple };
}

/**
 * The common case, a glob of literals and stars only (every built-in deny glob, `*compose*.yml`),
 * when no star could meet a `/` it may not cross: the first literal chunk is a prefix, the last a
 * suffix, and the ones between are found left to right, each at its first occurrence after the
 * previous one (leftmost placement never loses a match). Walks test every name they read, and this
 * is as fast as the regular expressions it replaced.
 */
function chunksMatcher(glob: string, crossSlash: boolean, nfa: Matcher): Matcher {
  const chunks = glob.split(/\*+/);
  const first = chunks[0]!;
  const last = chunks.length > 1 ? chunks[chunks.length - 1]! : null;
  const middle = chunks.slice(1, -1).filter((c) => c !== "");
  const needs = chunks.reduce((n, c) => n + c.length, 0);
  return (s) => {
    if (last === null) return s === first;
    if (!crossSlash && s.includes("/")) return nfa(s);
    if (s.length < needs || !s.startsWith(first) || !s.endsWith(last)) return false;
    let at = first.length;
    const end = s.length - last.length;
    for (const chunk of middle) {
      const found = s.indexOf(chunk, at);
      if (found === -1 || found + chunk.length > end) return false;
      at = found + chunk.length;
    }
    return true;
  };
}

function runMatcher(glob: string, crossSlash: boolean): Matcher {
  const { atoms, simple } = compileRun(glob, crossSlash);
  const nfa = new Nfa(atoms);
  const needs = atoms.filter((a) => !a.star).length;
  const bounded = needs === atoms.length;
  const viaNfa: Matcher = (s) => {
    // `s.length` counts UTF-16 units, one or two per code point.
    if (s.length < needs || (bounded && s.length > 2 * needs)) return false;
    let i = 0;
    return nfa.matches(() => {
      if (i >= s.length) return undefined;
      const c = s.codePointAt(i)!;
      i += c > 0xffff ? 2 : 1;
      return c;
    });
  };
  // Literal chunks compare as UTF-16 strings, which is comparing code points only for well-formed text.
  return simple && glob.isWellFormed() ? chunksMatcher(glob, crossSlash, viaNfa) : viaNfa;
}

/**
 * Path globs of search_text (docs/mcp-tools.md#search_text): glob segments match path segments. A `**`
 * segment matches zero or more non-empty segments, except last after another segment, where it
 * matches at least one (`docs/**` matches `docs/a`, not `docs`); any other glob segment matches
 * exactly one path segment with the run matcher, where `*` and `?` never cross `/`.
 */
function globstarMatcher(glob: string): Matcher {
  const segments = glob.split("/");
  const atoms: Atom<string>[] = [];
  const nonEmpty = (seg: string) => seg !== "";
  segments.forEach((seg, i) => {
    if (seg !== "**") {
      atoms.push({ star: false, accepts: runMatcher(seg, false) });
      return;
    }
    if (i > 0 && i === segments.length - 1) atoms.push({ star: false, accepts: nonEmpty });
    if (atoms.at(-1)?.star !== true) atoms.push({ star: true, accepts: nonEmpty });
  });
  const nfa = new Nfa(atoms);
  return (s) => {
    const parts = s.split("/");
    let i = 0;
    return nfa.matches(() => parts[i++]);
  };
}

export function globMatcher(glob: string, opts: GlobOptions): Matcher {
  return opts.globstar ? globstarMatcher(glob) : runMatcher(glob, opts.crossSlash);
}
