/**
 * What the operator commands (`tasks`, `recovery`, `doctor`; docs/cli.md) print: aligned
 * tables for a human, coloured only when stdout is a terminal, or JSON for `--json`; and how such a
 * command is run (`runCommand`).
 *
 * Offers `Style`, `paint`, `visibleWidth`, `visible`, `table`, `writeStdout`, `printLine`, `printJson`,
 * `printJsonLine`, `runCommand`.
 */
import { writeSync } from "node:fs";

export type Style = "bold" | "dim" | "green" | "yellow" | "red";

const SGR: Record<Style, string> = { bold: "1", dim: "2", green: "32", yellow: "33", red: "31" };
// ANSI colour escapes only: what `paint` adds, so widths can ignore it
const ESCAPES = /\x1b\[[0-9;]*m/g;

/** Colour only for a person at a terminal (and never when NO_COLOR is set). */
const colour = (): boolean => process.stdout.isTTY === true && !process.env["NO_COLOR"];

export function paint(style: Style, text: string): string {
  return colour() ? `\x1b[${SGR[style]}m${text}\x1b[0m` : text;
}

export const visibleWidth = (text: string): number => text.replace(ESCAPES, "").length;

/**
 * Control characters (a tab aside), line and paragraph separators and bidirectional overrides: what
 * could end a line, move the cursor, recolour the terminal or reorder what a person reads.
 */
const CONTROLS = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * Text an agent or a runtime wrote, made safe to print on one line: each control character is shown
 * as an escape (`\n`, `\r`, `\u001b`), so that text cannot forge a line of the command's output.
 */
export const visible = (text: string): string =>
  text.replace(CONTROLS, (c) => (c === "\n" ? "\\n" : c === "\r" ? "\\r" : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`));

/**
 * Rows as lines, each column padded to its widest cell (colour escapes not counted), two spaces
 * apart; the last column is never padded, so no line ends in spaces. `header` is shown in bold.
 */
export function table(rows: readonly (readonly string[])[], header?: readonly string[]): string[] {
  const all = header ? [header.map((h) => paint("bold", h)), ...rows] : rows;
  const widths: number[] = [];
  for (const row of all) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, visibleWidth(cell));
    });
  }
  return all.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell + " ".repeat(widths[i]! - visibleWidth(cell))))
      .join("  ")
      .trimEnd(),
  );
}

/**
 * Writes all of `text` to stdout synchronously: cli.ts ends with `process.exit`, which would drop
 * whatever a pipe had not taken yet. Answers false when the reader went away (`| head`, EPIPE).
 */
export function writeStdout(text: string): boolean {
  let rest = Buffer.from(text, "utf8");
  while (rest.length > 0) {
    try {
      rest = rest.subarray(writeSync(1, rest));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "EPIPE") return false;
      if (code !== "EAGAIN") throw e;
      Bun.sleepSync(1);
    }
  }
  return true;
}

/** An operator command whose reader went away has nothing left to do: it ends quietly. */
function write(text: string): void {
  if (!writeStdout(text)) process.exit(0);
}

export function printLine(line = ""): void {
  write(`${line}\n`);
}

/** `--json`: the command's one JSON document. */
export function printJson(value: unknown): void {
  write(`${JSON.stringify(value, null, 2)}\n`);
}

/** A stream of documents (`tasks tail --json`): one compact JSON object per line. */
export function printJsonLine(value: unknown): void {
  write(`${JSON.stringify(value)}\n`);
}

/**
 * Runs an operator command to its end. The Bridge client unrefs its sockets and timers (a call in
 * flight must never hold up the MCP server's exit), so a command with nothing else pending would
 * exit mid-call; a referenced timer keeps the process alive until the command settles. A coded
 * error propagates to cli.ts, which prints `serverfs: CODE: message` and exits 1.
 */
export async function runCommand(command: () => Promise<number>): Promise<number> {
  const keepAlive = setInterval(() => undefined, 60_000);
  try {
    return await command();
  } finally {
    clearInterval(keepAlive);
  }
}
