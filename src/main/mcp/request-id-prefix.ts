/**
 * The id of a JSON-RPC request read from the first bytes of its message, for a stdio line too large
 * to be read whole (stdio-flow.ts): the server answers that request with an error instead of leaving
 * it unanswered. Only a top-level `"id"` member whose value ends within the prefix counts; anything
 * else (a notification, an id after a huge `params`, a prefix that is not a JSON object) is null.
 * A single forward scan, linear in the prefix.
 */

export type RequestId = string | number;

const WHITESPACE = new Set([" ", "\t", "\n", "\r"]);
const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/;

const skipWhitespace = (s: string, i: number): number => {
  while (i < s.length && WHITESPACE.has(s[i]!)) i++;
  return i;
};

/** The index just past the string literal opening at `i`, or -1 when it does not end in `s`. */
function stringEnd(s: string, i: number): number {
  for (let j = i + 1; j < s.length; j++) {
    if (s[j] === "\\") j++;
    else if (s[j] === '"') return j + 1;
  }
  return -1;
}

/** A string or number literal at `i` that ends (is followed by more text) within `s`. */
function idValue(s: string, i: number): RequestId | null {
  if (s[i] === '"') {
    const end = stringEnd(s, i);
    return end === -1 ? null : (JSON.parse(s.slice(i, end)) as string);
  }
  const m = NUMBER.exec(s.slice(i, i + 64));
  if (!m || i + m[0].length >= s.length) return null;
  return Number(m[0]);
}

export function requestIdPrefix(prefix: string): RequestId | null {
  let i = skipWhitespace(prefix, 0);
  if (prefix[i] !== "{") return null;
  let depth = 0;
  let atKey = false;
  while (i < prefix.length) {
    const c = prefix[i]!;
    if (c === '"') {
      const end = stringEnd(prefix, i);
      if (end === -1) return null;
      if (depth === 1 && atKey) {
        const key = JSON.parse(prefix.slice(i, end)) as string;
        const colon = skipWhitespace(prefix, end);
        if (prefix[colon] !== ":") return null;
        const value = skipWhitespace(prefix, colon + 1);
        if (key === "id") return idValue(prefix, value);
        atKey = false;
        i = value;
        continue;
      }
      i = end;
      continue;
    }
    if (c === "{" || c === "[") {
      depth++;
      atKey = depth === 1;
    } else if (c === "}" || c === "]") {
      depth--;
      if (depth === 0) return null;
    } else if (c === "," && depth === 1) atKey = true;
    i++;
  }
  return null;
}
