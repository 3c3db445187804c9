/**
 * The one glob matcher (mcp-surface.md §4.4): case-sensitive, whole-string; `*` any run, `?` one
 * character, `[abc]` / `[a-z]` / `[!abc]` classes, an unmatched `[` is literal. Deny globs,
 * `find_files.pattern` and `search_text.glob` all compile through here.
 *
 * Globs are compiled to `u`-flag regular expressions, so characters are code points (an astral
 * character is one `?`) and only escapes that `u` mode accepts are emitted.
 */

export interface GlobOptions {
  /** `*`, `?` and negated classes may match `/` (whole-path deny globs). */
  crossSlash: boolean;
  /** A whole `**` segment matches zero or more path segments (search_text globs). */
  globstar?: boolean;
}

/** Outside a class `u` mode accepts identity escapes only for syntax characters and `/`. */
const escapeLiteral = (c: string) => (/^[\\^$.*+?()[\]{}|/]$/.test(c) ? `\\${c}` : c);
/** Inside a class only these characters are special. */
const escapeInClass = (c: string) => (/^[\\\]^[-]$/.test(c) ? `\\${c}` : c);

/** Compiles the class starting at `chars[start] === "["`, or null when no `]` closes it. */
function compileClass(chars: readonly string[], start: number, opts: GlobOptions): { source: string; end: number } | null {
  let i = start + 1;
  const negate = chars[i] === "!";
  if (negate) i++;
  const body: string[] = [];
  for (let first = true; i < chars.length; first = false) {
    const c = chars[i]!;
    if (c === "]" && !first) {
      const inner = body.join("");
      if (!negate) return { source: `[${inner}]`, end: i };
      return { source: `[^${inner}${opts.crossSlash ? "" : "/"}]`, end: i };
    }
    const hi = chars[i + 2];
    if (chars[i + 1] === "-" && hi !== undefined && hi !== "]") {
      // A reversed range (`[z-a]`) holds no character rather than being a syntax error.
      if (c.codePointAt(0)! <= hi.codePointAt(0)!) body.push(`${escapeInClass(c)}-${escapeInClass(hi)}`);
      i += 3;
    } else {
      body.push(escapeInClass(c));
      i++;
    }
  }
  return null;
}

function compileRun(glob: string, opts: GlobOptions): string {
  const chars = Array.from(glob);
  const any = opts.crossSlash ? "[\\s\\S]" : "[^/]";
  let out = "";
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    if (c === "*") {
      while (chars[i + 1] === "*") i++;
      out += `${any}*`;
    } else if (c === "?") {
      out += any;
    } else if (c === "[") {
      const cls = compileClass(chars, i, opts);
      if (cls) {
        out += cls.source;
        i = cls.end;
      } else out += "\\[";
    } else out += escapeLiteral(c);
  }
  return out;
}

export function compileGlob(glob: string, opts: GlobOptions): RegExp {
  if (!opts.globstar) return new RegExp(`^${compileRun(glob, opts)}$`, "u");
  const segments = glob.split("/");
  let source = "";
  segments.forEach((seg, i) => {
    const last = i === segments.length - 1;
    if (seg === "**") source += last ? "(?:[^/]+(?:/[^/]+)*)?" : "(?:[^/]+/)*";
    else source += compileRun(seg, opts) + (last ? "" : "/");
  });
  return new RegExp(`^${source}$`, "u");
}

export type Matcher = (s: string) => boolean;

export function globMatcher(glob: string, opts: GlobOptions): Matcher {
  const re = compileGlob(glob, opts);
  return (s) => re.test(s);
}
