/**
 * What a log line may say about an error nothing expected (docs/mcp-tools.md#audit-log,
 * docs/deployment.md "Logs"): its name, its errno code and system call, and the frames of its stack,
 * and the same of its `cause` — never its message. An OS error's message names the file it failed on,
 * a parse error's can quote what it parsed, and a stack begins with that message (a message of
 * several lines, too), so the message is cut off the stack as a whole before any line is read as a
 * frame. A frame keeps its function name and its place in the code, relative to the `src/` or
 * `node_modules/` it is in (else just the file's name): the install's own directories stay out too.
 *
 * Offers `errorTrace(e)`: flat audit fields (`error_name`, `error_code`, `error_syscall`,
 * `error_frames`, and `cause_*` for the error's cause).
 */
import type { AuditFields } from "./audit.ts";

/** Enough frames to see where it came from and what called it. */
const MAX_FRAMES = 12;
/** errno codes (`EINVAL`), SQLite's (`SQLITE_IOERR_READ`), Node's (`ERR_INVALID_ARG_TYPE`), ServerFS's own. */
const CODE = /^[A-Z][A-Z0-9_]{1,63}$/;
const SYSCALL = /^[a-z][a-z0-9_]{0,31}$/;
/** A function name as the engine writes it (`readSync`, `async Foo.bar`, `<anonymous>`). */
const FUNCTION = /^[\w$.<>[\] ]{1,80}$/;

const stringField = (e: object, key: string, pattern: RegExp): string | undefined => {
  const value = (e as Record<string, unknown>)[key];
  return typeof value === "string" && pattern.test(value) ? value : undefined;
};

/** A frame's place in the code without the directories above it. */
function place(location: string): string {
  for (const root of ["/src/", "/node_modules/"]) {
    const at = location.lastIndexOf(root);
    if (at !== -1) return location.slice(at + 1);
  }
  return location.slice(location.lastIndexOf("/") + 1);
}

/** One stack line as `function (place)`, or null when it is no frame. */
function frame(line: string): string | null {
  const text = line.trim();
  if (!text.startsWith("at ")) return null;
  const rest = text.slice(3);
  const open = rest.lastIndexOf(" (");
  if (open !== -1 && rest.endsWith(")")) {
    const name = rest.slice(0, open);
    return `${FUNCTION.test(name) ? name : "?"} (${place(rest.slice(open + 2, -1))})`;
  }
  return place(rest);
}

/** The stack's frames, its message cut off first. */
function frames(e: Error): string {
  const stack = typeof e.stack === "string" ? e.stack : "";
  const message = typeof e.message === "string" ? e.message : "";
  const at = message === "" ? -1 : stack.indexOf(message);
  // the header is `Name: message`; where the message cannot be found the first line is the header
  const body = at !== -1 ? stack.slice(at + message.length) : stack.slice(stack.indexOf("\n") + 1 || stack.length);
  const list: string[] = [];
  for (const line of body.split("\n")) {
    const f = frame(line);
    if (f !== null) list.push(f);
    if (list.length === MAX_FRAMES) break;
  }
  return list.join(" < ");
}

function describe(e: unknown, prefix: "error" | "cause"): AuditFields {
  if (!(e instanceof Error)) return { [`${prefix}_name`]: e === null ? "null" : typeof e };
  return {
    [`${prefix}_name`]: FUNCTION.test(e.name) ? e.name : "Error",
    [`${prefix}_code`]: stringField(e, "code", CODE),
    [`${prefix}_syscall`]: stringField(e, "syscall", SYSCALL),
    [`${prefix}_frames`]: frames(e),
  };
}

export function errorTrace(e: unknown): AuditFields {
  const cause = e instanceof Error && e.cause !== undefined ? describe(e.cause, "cause") : {};
  return { ...describe(e, "error"), ...cause };
}
