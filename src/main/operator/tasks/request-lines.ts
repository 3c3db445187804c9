/**
 * A task's pending request in full, as `serverfs tasks show` prints it under `request`
 * (docs/cli.md#what-tasks-prints): the parts every text surface shows (src/shared/request-details.ts),
 * indented by two spaces; each diff under `diff of PATH:`, every line of it behind `  │ `.
 *
 * What an agent wrote can neither forge a line of the output nor steer the terminal: every control
 * character is shown escaped (`visible`), and a diff's lines all carry the `│` prefix, so no line of
 * a diff can pass for a field or a line of another part. Bounded: a fact's line to 4 KiB (a tool's
 * input and a permission to their own bound), a diff to its first 200 lines of at most 512 bytes
 * each; what is left out is said, and `--json` has the whole request.
 */
import { type RequestPart, requestParts } from "../../../shared/request-details.ts";
import { cutUtf8 } from "../../../shared/utf8.ts";
import { paint, visible } from "../output.ts";

const LINE_BYTES = 4096;
const DIFF_LINES = 200;
const DIFF_LINE_BYTES = 512;
const GUTTER = "  │ ";

function bounded(text: string, max: number): string {
  const cut = cutUtf8(text, max);
  return cut.truncated ? `${cut.text}…` : cut.text;
}

function diffLine(line: string): string {
  const shown = visible(bounded(line, DIFF_LINE_BYTES));
  if (line.startsWith("@@")) return GUTTER + paint("dim", shown);
  if (line.startsWith("+") && !line.startsWith("+++")) return GUTTER + paint("green", shown);
  if (line.startsWith("-") && !line.startsWith("---")) return GUTTER + paint("red", shown);
  return GUTTER + shown;
}

function diffLines(part: Extract<RequestPart, { type: "diff" }>): string[] {
  const lines = part.text.endsWith("\n") ? part.text.slice(0, -1).split("\n") : part.text.split("\n");
  const out = [`  diff of ${visible(part.path)}:`, ...lines.slice(0, DIFF_LINES).map(diffLine)];
  if (lines.length > DIFF_LINES) out.push(paint("dim", `${GUTTER}… ${lines.length - DIFF_LINES} more lines (--json has the whole diff)`));
  if (part.cut) out.push(paint("dim", "  (the Bridge cut this diff to its bound)"));
  return out;
}

export function requestLines(kind: "approval" | "question", payload: Record<string, unknown>): string[] {
  return requestParts(kind, payload).flatMap((part) =>
    part.type === "line" ? [`  ${visible(bounded(part.text, Math.min(part.max ?? LINE_BYTES, LINE_BYTES)))}`] : diffLines(part),
  );
}
