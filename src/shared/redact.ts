/**
 * Host-path redaction (docs/events.md#redaction, docs/mcp-tools.md#redaction-and-identifiers): host paths and provider-native ids never
 * leave the Bridge. Pure and linear in the input, so the 8 MiB final text is cheap. Offers:
 * - `new Redactor(roots)`: roots are a workdir's configured path and its resolved real path;
 *   - `redactValue(v)`: a JSON value (event or HITL payload) with dropped keys removed at any depth,
 *     path keys and path-list elements made workdir-relative, lone absolute paths likewise, and every
 *     other string (object keys included) redacted as free text;
 *   - `redactPath(p)`: one path field: relative, `"."` or `"<outside-workdir>"`;
 *   - `redactText(t)`: free text (the final response, messages): roots become `<workdir>…`;
 *   - `redactErrorMessage(m)`: `redactText` then `cutErrorMessage`;
 * - `cutErrorMessage(m)`: a UTF-8-safe prefix of at most `max_error_message_bytes` (limits.ts);
 * - `normalizeAbsolute(p)`: lexical normalization of an absolute path (`.`, `..`, `//`, trailing `/`).
 */
import { LIMITS } from "./limits.ts";
import { cutUtf8 } from "./utf8.ts";

export const WORKDIR_MARK = "<workdir>";
export const OUTSIDE_MARK = "<outside-workdir>";

export type JsonObject = Record<string, unknown>;

const DROPPED_KEYS: ReadonlySet<string> = new Set([
  "native_session_id",
  "native_turn_id",
  "thread_id",
  "turn_id",
  "session_id",
  "threadId",
  "turnId",
  "sessionId",
]);
const PATH_KEYS: ReadonlySet<string> = new Set(["path", "cwd", "relative_cwd", "host_path", "file_path", "grantRoot"]);
const PATH_LIST_KEYS: ReadonlySet<string> = new Set(["read", "write", "readableRoots", "writableRoots"]);

/** A root occurrence preceded by one of these is the tail of a longer word or path, not a root. */
const PATH_PREFIX_CHAR = /[A-Za-z0-9._~/-]/;
/** What ends a path run in free text; every other character can continue a path. */
const RUN_END_CLASS = /[\s"'`()[\]{}<>,;|]/;
const RUN_END = new RegExp(RUN_END_CLASS.source, "g");
const WHITESPACE = /\s/;

export function normalizeAbsolute(path: string): string {
  const segments: string[] = [];
  for (const seg of path.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") segments.pop();
    else segments.push(seg);
  }
  return `/${segments.join("/")}`;
}

export function cutErrorMessage(message: string): string {
  return cutUtf8(message, LIMITS.max_error_message_bytes).text;
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

const isPlainObject = (v: unknown): v is JsonObject => {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
};

/** Sets an own property even for `__proto__`, which JSON.parse may produce as a plain key. */
function setOwn(target: JsonObject, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

export class Redactor {
  /** Normalized absolute roots, longest first, so a root that extends another wins. */
  private readonly roots: readonly string[];
  /** All roots as one alternation, longest first; null when there is nothing to find. */
  private readonly occurrence: RegExp | null;

  constructor(roots: readonly string[]) {
    const unique = new Set(roots.filter((r) => r.startsWith("/")).map(normalizeAbsolute));
    this.roots = [...unique].sort((a, b) => b.length - a.length);
    this.occurrence = this.roots.length > 0 ? new RegExp(this.roots.map(escapeRegExp).join("|"), "g") : null;
  }

  redactValue(value: string): string;
  redactValue(value: JsonObject): JsonObject;
  redactValue(value: unknown): unknown;
  redactValue(value: unknown): unknown {
    if (typeof value === "string") return this.redactLoneString(value);
    if (Array.isArray(value)) return value.map((e) => this.redactValue(e));
    if (!isPlainObject(value)) return value;
    const out: JsonObject = {};
    for (const [key, e] of Object.entries(value)) {
      if (DROPPED_KEYS.has(key)) continue;
      let redacted: unknown;
      if (PATH_KEYS.has(key)) redacted = this.redactPathField(e);
      else if (PATH_LIST_KEYS.has(key)) redacted = Array.isArray(e) ? e.map((x) => this.redactPathField(x)) : this.redactPathField(e);
      else redacted = this.redactValue(e);
      setOwn(out, this.redactLoneString(key), redacted);
    }
    return out;
  }

  /**
   * One path: an absolute one becomes workdir-relative, `"."` for a root, `"<outside-workdir>"`
   * outside. A relative one is kept; it still passes the free-text rule, which leaves every plain
   * relative path as it is but catches a root embedded after a separator.
   */
  redactPath(path: string): string {
    if (!path.startsWith("/")) return this.redactText(path);
    const rel = this.relativeOf(normalizeAbsolute(path));
    if (rel === null) return OUTSIDE_MARK;
    return rel === "" ? "." : rel;
  }

  redactText(text: string): string {
    const re = this.occurrence;
    if (re === null) return text;
    let out = "";
    let copied = 0;
    re.lastIndex = 0;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      const start = m.index;
      if (start > 0 && PATH_PREFIX_CHAR.test(text[start - 1]!)) {
        re.lastIndex = start + 1;
        continue;
      }
      const root = m[0];
      const after = start + root.length;
      const next = text[after];
      let end: number;
      let replacement: string;
      if (root !== "/" && (next === undefined || RUN_END_CLASS.test(next))) {
        end = after;
        replacement = WORKDIR_MARK;
      } else if (root === "/" || next === "/") {
        end = runEnd(text, after);
        const rel = this.relativeOf(normalizeAbsolute(text.slice(start, end)));
        replacement = rel === null ? OUTSIDE_MARK : rel === "" ? WORKDIR_MARK : `${WORKDIR_MARK}/${rel}`;
      } else {
        // a sibling look-alike such as `…/repo2` of root `…/repo`
        end = runEnd(text, after);
        replacement = OUTSIDE_MARK;
      }
      out += text.slice(copied, start) + replacement;
      copied = end;
      re.lastIndex = end;
    }
    return copied === 0 ? text : out + text.slice(copied);
  }

  redactErrorMessage(message: string): string {
    return cutErrorMessage(this.redactText(message));
  }

  /** A string value that is not under a path key: a lone absolute path, else free text. */
  private redactLoneString(s: string): string {
    return s.startsWith("/") && !WHITESPACE.test(s) ? this.redactPath(s) : this.redactText(s);
  }

  private redactPathField(v: unknown): unknown {
    return typeof v === "string" ? this.redactPath(v) : this.redactValue(v);
  }

  /** The workdir-relative form of a normalized absolute path: "" for a root, null outside every root. */
  private relativeOf(path: string): string | null {
    for (const root of this.roots) {
      if (path === root) return "";
      if (root === "/") return path.slice(1);
      if (path.startsWith(root) && path[root.length] === "/") return path.slice(root.length + 1);
    }
    return null;
  }
}

/** The index of the first run-ending character at or after `from`, or the text's length. */
function runEnd(text: string, from: number): number {
  RUN_END.lastIndex = from;
  const m = RUN_END.exec(text);
  return m === null ? text.length : m.index;
}
