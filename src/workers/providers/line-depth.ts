/**
 * How deeply one provider line may nest (docs/runtimes.md#process-model): `MAX_LINE_DEPTH` arrays and
 * objects. A deeper line is malformed, as a line that is not JSON is. `JSON.parse` takes any depth, but
 * what reads a line's values afterwards walks them recursively (a long line's string restore,
 * redaction, canonical JSON) and would overflow the stack on a line nested 10^5 deep; no provider's
 * wire comes near the bound (Codex's own reader stops at 128).
 */

const MAX_LINE_DEPTH = 512;

/** Whether `value` nests arrays and objects deeper than `MAX_LINE_DEPTH`; walked without recursion. */
export function nestsTooDeep(value: unknown): boolean {
  const stack: [object, number][] = [];
  if (typeof value === "object" && value !== null) stack.push([value, 1]);
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [container, depth] = top;
    if (depth > MAX_LINE_DEPTH) return true;
    for (const child of Array.isArray(container) ? container : Object.values(container)) {
      if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}
