/**
 * Unified diffs for approval payloads (docs/agent-requests.md): what a human sees of a file change
 * before allowing it. One hunk per change, spanning the changed lines with up to three lines of
 * context: a reader sees exactly what goes and what comes, not a minimal edit script.
 *
 * Offers `unifiedDiff(path, before, after)` (null `before` = a new file, null `after` = a deletion)
 * and `diffHeader(path, kind)` for a hunk body another tool computed (Codex's update hunks).
 */

const CONTEXT = 3;

/** Lines of a text; a final newline ends the last line rather than starting an empty one. */
function lines(text: string): string[] {
  if (text === "") return [];
  const out = text.split("\n");
  if (out.at(-1) === "") out.pop();
  return out;
}

/** `--- a/path` / `+++ b/path`, with /dev/null for the side that does not exist. */
export function diffHeader(path: string, kind: "add" | "update" | "delete" | "rename", newPath?: string): string {
  const from = kind === "add" ? "/dev/null" : `a/${path}`;
  const to = kind === "delete" ? "/dev/null" : `b/${newPath ?? path}`;
  return `--- ${from}\n+++ ${to}\n`;
}

const range = (start: number, count: number): string => (count === 1 ? `${start}` : `${count === 0 ? start - 1 : start},${count}`);

export function unifiedDiff(path: string, before: string | null, after: string | null): string {
  const kind = before === null ? "add" : after === null ? "delete" : "update";
  const a = lines(before ?? "");
  const b = lines(after ?? "");
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  if (head === a.length && head === b.length) return diffHeader(path, kind);
  const from = Math.max(0, head - CONTEXT);
  const aEnd = Math.min(a.length, a.length - tail + CONTEXT);
  const bEnd = Math.min(b.length, b.length - tail + CONTEXT);
  const body = [
    ...a.slice(from, head).map((l) => ` ${l}`),
    ...a.slice(head, a.length - tail).map((l) => `-${l}`),
    ...b.slice(head, b.length - tail).map((l) => `+${l}`),
    ...a.slice(a.length - tail, aEnd).map((l) => ` ${l}`),
  ];
  const aCount = aEnd - from;
  const bCount = bEnd - from;
  return `${diffHeader(path, kind)}@@ -${range(from + 1, aCount)} +${range(from + 1, bCount)} @@\n${body.join("\n")}\n`;
}
