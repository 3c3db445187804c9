/**
 * Where in a TOML text a parse error is. Bun's TOML parser says what is wrong but not where (its
 * error's line and column do not point into the text), so the place is found by parsing prefixes:
 * the first line whose prefix fails with the same message, then the first column of that line that
 * does. Config files are small; the search is bounded so a huge file costs at most a few thousand
 * parses of short prefixes.
 */
const MAX_LINES = 2000;
const MAX_COLUMNS = 500;

const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e));

function failsWith(text: string, message: string): boolean {
  try {
    Bun.TOML.parse(text);
    return false;
  } catch (e) {
    return messageOf(e) === message;
  }
}

/** 1-based line and column of the parse error `error` in `text`, or null where it cannot be found. */
export function locateTomlError(text: string, error: unknown): { line: number; column: number } | null {
  const message = messageOf(error);
  const lines = text.split("\n");
  if (lines.length > MAX_LINES) return null;
  for (let n = 1; n <= lines.length; n++) {
    const before = lines.slice(0, n - 1).join("\n");
    const joined = n === 1 ? "" : `${before}\n`;
    const line = lines[n - 1]!;
    // with its newline: some errors (an unterminated string) are about the line's end
    if (!failsWith(joined + line + (n < lines.length ? "\n" : ""), message)) continue;
    for (let c = 1; c <= Math.min(line.length, MAX_COLUMNS); c++) {
      if (failsWith(joined + line.slice(0, c), message)) return { line: n, column: c };
    }
    return { line: n, column: line.length + 1 };
  }
  return null;
}
