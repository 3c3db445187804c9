/**
 * `search_text.glob` (docs/mcp-tools.md#search_text): a leading `!` makes it an exclusion. Without `/` it is
 * matched against the basename; with `/` (a leading `/` dropped) against the path below the search
 * directory, where `*` and `?` stay within a segment and a `**` segment spans any number of them.
 * An inclusion only restricts files; an exclusion skips files and prunes directories.
 */
import { globMatcher } from "../../shared/path/glob.ts";

export interface SearchGlob {
  admitsFile(name: string, rel: string): boolean;
  entersDir(name: string, rel: string): boolean;
}

const EVERYTHING: SearchGlob = { admitsFile: () => true, entersDir: () => true };

export function searchGlob(glob: string | null): SearchGlob {
  if (glob === null || glob === "") return EVERYTHING;
  const exclude = glob.startsWith("!");
  const body = exclude ? glob.slice(1) : glob;
  let matches: (name: string, rel: string) => boolean;
  if (body.includes("/")) {
    const m = globMatcher(body.startsWith("/") ? body.slice(1) : body, { crossSlash: false, globstar: true });
    matches = (_name, rel) => m(rel);
  } else {
    const m = globMatcher(body, { crossSlash: false });
    matches = (name) => m(name);
  }
  if (!exclude) return { admitsFile: matches, entersDir: () => true };
  return { admitsFile: (name, rel) => !matches(name, rel), entersDir: (name, rel) => !matches(name, rel) };
}
