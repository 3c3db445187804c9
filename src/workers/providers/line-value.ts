/**
 * What one provider line's bytes parse to (docs/runtimes.md#process-model), for a short line whole and
 * for a long line's skeleton alike: a JSON value; `NOT_JSON` for a line that is not JSON or that nests
 * deeper than `MAX_LINE_DEPTH` arrays and objects; bytes that are not UTF-8 throw
 * `AGENT_PROVIDER_ERROR`. A deeper line is malformed, as a line that is not JSON is: `JSON.parse` takes
 * any depth, but what reads a line's values afterwards walks them recursively (a long line's string
 * restore, redaction, canonical JSON) and would overflow the stack on a line nested 10^5 deep; no
 * provider's wire comes near the bound (Codex's own reader stops at 128).
 *
 * Offers `NOT_JSON`, `notUtf8`, `parseLine`.
 */
import { ServerFsError } from "../../shared/errors.ts";
import { decodeStrict } from "../../shared/utf8.ts";

/** What a line that does not parse as JSON yields. */
export const NOT_JSON: unique symbol = Symbol("not JSON");

export const notUtf8 = (): ServerFsError => new ServerFsError("AGENT_PROVIDER_ERROR", "provider sent a line that is not valid UTF-8");

const MAX_LINE_DEPTH = 512;

/** The value of a line's bytes, or `NOT_JSON`; throws `notUtf8()` for bytes that are not UTF-8. */
export function parseLine(bytes: Uint8Array): unknown {
  const text = decodeStrict(bytes);
  if (text === null) throw notUtf8();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
  return nestsTooDeep(value) ? NOT_JSON : value;
}

/** Whether `value` nests arrays and objects deeper than `MAX_LINE_DEPTH`; walked without recursion. */
function nestsTooDeep(value: unknown): boolean {
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
