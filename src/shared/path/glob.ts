/**
 * The one glob matcher (mcp-surface.md §4.4): case-sensitive, whole-string; `*` any run, `?` one
 * character, `[abc]` / `[a-z]` / `[!abc]` classes, an unmatched `[` is literal. Deny globs,
 * `find_files.pattern` and `search_text.glob` all compile through here.
 */

export interface GlobOptions {
  /** `*` and `?` may match `/` (whole-path deny globs). */
  crossSlash: boolean;
  /** A whole `**` segment matches zero or more path segments (search_text globs). */
  globstar?: boolean;
}

const escapeChar = (c: string) => (/[\\^$.*+?()[\]{}|/-]/.test(c) ? `\\${c}` : c);

function compileClass(glob: string, start: number): { source: string; end: number } | null {
  let i = start + 1;
  let negate = false;
  if (glob[i] === "!") {
    negate = true;
    i++;
  }
  const body: string[] = [];
  let first = true;
  while (i < glob.length) {
    const c = glob[i]!;
    if (c === "]" && !first) {
      const inner = body.join("");
      return { source: negate ? `[^${inner}/]` : `[${inner}]`, end: i };
    }
    if (glob[i + 1] === "-" && glob[i + 2] !== undefined && glob[i + 2] !== "]") {
      body.push(`${escapeChar(c)}-${escapeChar(glob[i + 2]!)}`);
      i += 3;
    } else {
      body.push(escapeChar(c));
      i++;
    }
    first = false;
  }
  return null;
}

function compileRun(glob: string, opts: GlobOptions): string {
  const any = opts.crossSlash ? "[\\s\\S]" : "[^/]";
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*") {
      while (glob[i + 1] === "*") i++;
      out += `${any}*`;
    } else if (c === "?") {
      out += any;
    } else if (c === "[") {
      const cls = compileClass(glob, i);
      if (cls) {
        out += cls.source;
        i = cls.end;
      } else out += "\\[";
    } else out += escapeChar(c);
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
