/**
 * What the two ends of a JSON-RPC message say about it, for a stdio line too large to be read whole
 * (stdio-flow.ts), so the request can still be answered (oversized-message.ts). Its first bytes
 * give `method`, `params.name` (the tool of a `tools/call`) and perhaps `id`; its last bytes give
 * `id` when it comes after the payload, as the MCP SDK's clients write it (`method`, `params`,
 * `jsonrpc`, `id`). Only top-level members count (never `params.arguments.id`), and only values that
 * lie whole within the bytes kept. Each end is read by one scan, linear in its length.
 */

export type RequestId = string | number;

export interface MessagePrefix {
  id: RequestId | null;
  method: string | null;
  /** `params.name`: the tool of a `tools/call`. */
  tool: string | null;
}

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

/** A string, or a JSON number, as an id; anything else (null, a cut value) is none. */
function idOf(text: string): RequestId | null {
  if (text.startsWith('"')) return JSON.parse(text) as string;
  const m = NUMBER.exec(text);
  return m && m[0].length === text.length ? Number(text) : null;
}

/** An open object or array, and the member name it is the value of (null at the top or in an array). */
interface Frame {
  object: boolean;
  key: string | null;
}

export function readMessagePrefix(prefix: string): MessagePrefix {
  const found: MessagePrefix = { id: null, method: null, tool: null };
  const stack: Frame[] = [];
  /** The member whose value comes next, in the innermost object. */
  let key: string | null = null;
  let atKey = false;
  const record = (value: string | number) => {
    if (stack.length === 1 && key === "id") found.id = value;
    else if (stack.length === 1 && key === "method" && typeof value === "string") found.method = value;
    else if (stack.length === 2 && stack[1]!.key === "params" && stack[1]!.object && key === "name" && typeof value === "string") found.tool = value;
    key = null;
  };
  let i = skipWhitespace(prefix, 0);
  if (prefix[i] !== "{") return found;
  while (i < prefix.length) {
    const c = prefix[i]!;
    if (c === '"') {
      const end = stringEnd(prefix, i);
      if (end === -1) break;
      const text = JSON.parse(prefix.slice(i, end)) as string;
      if (atKey) {
        const colon = skipWhitespace(prefix, end);
        if (prefix[colon] !== ":") break;
        key = text;
        atKey = false;
        i = colon + 1;
      } else {
        record(text);
        i = end;
      }
      continue;
    }
    if (c === "-" || (c >= "0" && c <= "9")) {
      const m = NUMBER.exec(prefix.slice(i, i + 64));
      if (!m || i + m[0].length >= prefix.length) break;
      record(Number(m[0]));
      i += m[0].length;
      continue;
    }
    if (c === "{" || c === "[") {
      stack.push({ object: c === "{", key });
      key = null;
      atKey = c === "{";
    } else if (c === "}" || c === "]") {
      stack.pop();
      key = null;
      if (stack.length === 0) break;
    } else if (c === ",") {
      key = null;
      atKey = stack.at(-1)!.object;
    }
    i++;
  }
  return found;
}

/** The last index at or before `i` that is not whitespace. */
const skipWhitespaceBack = (s: string, i: number): number => {
  while (i >= 0 && WHITESPACE.has(s[i]!)) i--;
  return i;
};

/**
 * The index of the quote that opens the string literal closing at `i`. In JSON a quote inside a
 * string is always escaped, so the opening one is the first quote before `i` preceded by an even
 * number of backslashes. -1 when the kept bytes do not reach it (or cut a run of backslashes).
 */
function stringStartBack(s: string, i: number): number {
  for (let j = i - 1; j >= 0; j--) {
    if (s[j] !== '"') continue;
    let k = j - 1;
    while (k >= 0 && s[k] === "\\") k--;
    if (k < 0) return -1;
    if ((j - 1 - k) % 2 === 0) return j;
  }
  return -1;
}

/** The index where the value ending at `i` starts, or -1 when the kept bytes do not reach it. */
function valueStartBack(s: string, i: number): number {
  const c = s[i];
  if (c === '"') return stringStartBack(s, i);
  if (c === "}" || c === "]") {
    let depth = 0;
    for (let j = i; j >= 0; j--) {
      if (s[j] === '"') {
        j = stringStartBack(s, j);
        if (j === -1) return -1;
      } else if (s[j] === "}" || s[j] === "]") depth++;
      else if (s[j] === "{" || s[j] === "[") {
        depth--;
        if (depth === 0) return j;
      }
    }
    return -1;
  }
  let j = i;
  while (j >= 0 && /[0-9A-Za-z.+-]/.test(s[j]!)) j--;
  return j === i || j < 0 ? -1 : j + 1;
}

/** The top-level `id` among the last members of a message, read from its last bytes. */
export function readMessageIdFromEnd(suffix: string): RequestId | null {
  let i = skipWhitespaceBack(suffix, suffix.length - 1);
  if (suffix[i] !== "}") return null;
  i--;
  for (;;) {
    i = skipWhitespaceBack(suffix, i);
    const valueEnd = i + 1;
    const valueStart = valueStartBack(suffix, i);
    if (valueStart === -1) return null;
    const colon = skipWhitespaceBack(suffix, valueStart - 1);
    if (suffix[colon] !== ":") return null;
    const keyEnd = skipWhitespaceBack(suffix, colon - 1);
    if (suffix[keyEnd] !== '"') return null;
    const keyStart = stringStartBack(suffix, keyEnd);
    if (keyStart === -1) return null;
    if (JSON.parse(suffix.slice(keyStart, keyEnd + 1)) === "id") return idOf(suffix.slice(valueStart, valueEnd));
    i = skipWhitespaceBack(suffix, keyStart - 1);
    // A comma: another member before this one; anything else (the opening brace) ends the search.
    if (suffix[i] !== ",") return null;
    i--;
  }
}
