/**
 * Literal text edits (docs/mcp-tools.md#edit_text_file): each edit is a replace-all of non-overlapping
 * occurrences scanned left to right, applied to the text as the previous edits left it, and its
 * occurrence count must be exactly the expected one. Matching works on code points: texts are
 * made well-formed first, so an edit can never split a surrogate pair.
 */
import { ServerFsError } from "../../../shared/errors.ts";

export interface TextEdit {
  old_text: string;
  new_text: string;
  expected_count: number;
}

const conflict = (where: string, phrase: string) => new ServerFsError("EDIT_CONFLICT", `${where} ${phrase}`);

/** Applies `edits` in order to `text` (BOM excluded); any mismatch → EDIT_CONFLICT, nothing applied. */
export function applyEdits(text: string, edits: readonly TextEdit[], where: string): string {
  let out = text;
  edits.forEach((edit, i) => {
    const oldText = edit.old_text.toWellFormed();
    const newText = edit.new_text.toWellFormed();
    if (oldText === "") {
      // Only an empty text has an occurrence of the empty string, and exactly one.
      if (out !== "") throw conflict(where, `edit ${i + 1}: an empty old_text is only allowed on an empty file`);
      if (edit.expected_count !== 1) throw conflict(where, `edit ${i + 1}: found 1 occurrence, expected ${edit.expected_count}`);
      out = newText;
      return;
    }
    const parts = out.split(oldText);
    const found = parts.length - 1;
    if (found !== edit.expected_count) {
      throw conflict(where, `edit ${i + 1}: found ${found} occurrence${found === 1 ? "" : "s"}, expected ${edit.expected_count}`);
    }
    out = parts.join(newText);
  });
  return out;
}
