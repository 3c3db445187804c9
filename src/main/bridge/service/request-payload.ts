/**
 * The last step before a human-in-the-loop request is stored (docs/agent-requests.md): an adapter's
 * proposed file changes become what a human can judge — each change's kind and a bounded unified
 * diff with workdir-relative paths — and every request gets its one-line `summary`.
 *
 * Runs on the main thread, where the workdir's path policy lives, on a payload the provider worker
 * already redacted. An existing file is read only through the handle walk from the workdir's real
 * root and only when the path policy allows the path; a path outside the workdir, or a hidden, denied
 * or reserved one, gets `"diff": null, "withheld": true` (its content never reaches the request).
 * Each diff is cut to 16 KiB (`truncated: true`); once 48 KiB of diffs are used, later changes carry
 * `"diff": null, "truncated": true`; the whole payload stays within `max_interaction_bytes` (limits.ts).
 *
 * Offers `describeRequest(kind, payload, ws)`.
 */
import { closeSync, readSync } from "node:fs";
import { withParent } from "../../../shared/fs/dir-handle.ts";
import { openExistingFile } from "../../../shared/fs/existing-file.ts";
import { LIMITS } from "../../../shared/limits.ts";
import { OUTSIDE_MARK, Redactor } from "../../../shared/redact.ts";
import { requestSummary } from "../../../shared/request-summary.ts";
import { diffHeader, unifiedDiff } from "../../../shared/unified-diff.ts";
import { byteLength, cutUtf8, decodeStrict } from "../../../shared/utf8.ts";
import type { Workspace } from "../../../shared/workspace.ts";
import type { ProposedChange } from "../../../workers/providers/types.ts";

export const DIFF_FILE_BYTES = 16_384;
export const DIFF_REQUEST_BYTES = 49_152;
/** An existing file larger than this is not read for a diff: the human sees the kind only. */
const READ_LIMIT_BYTES = 1_048_576;

type Json = Record<string, unknown>;

interface FileChange {
  path: string;
  kind: "add" | "update" | "delete" | "rename";
  new_path?: string;
  diff: string | null;
  truncated?: true;
  withheld?: true;
}

/** The path policy's verdict on a redacted, workdir-relative path. */
function allowed(ws: Workspace, path: string): boolean {
  if (path === OUTSIDE_MARK || path.startsWith("/")) return false;
  try {
    ws.confine(path);
    return true;
  } catch {
    return false;
  }
}

/** The file's text through the handle walk, or null when it does not exist or cannot be shown. */
function readExisting(ws: Workspace, path: string): { text: string | null; shown: boolean } {
  const { segments } = ws.confine(path);
  if (segments.length === 0) return { text: null, shown: false };
  try {
    return withParent(ws.realRoot, segments, { where: ws.where(path), side: "read" }, (dirFd, name) => {
      const { fd, st } = openExistingFile(dirFd, name, ws.where(path), "read");
      try {
        if (st.size > BigInt(READ_LIMIT_BYTES)) return { text: null, shown: false };
        const buf = Buffer.alloc(Number(st.size));
        let got = 0;
        while (got < buf.length) {
          const n = readSync(fd, buf, got, buf.length - got, got);
          if (n === 0) break;
          got += n;
        }
        const text = decodeStrict(buf.subarray(0, got));
        return text === null ? { text: null, shown: false } : { text, shown: true };
      } finally {
        closeSync(fd);
      }
    });
  } catch (e) {
    const missing = (e as { code?: string }).code === "PATH_NOT_FOUND";
    return { text: null, shown: missing };
  }
}

function applyEdits(before: string, edits: NonNullable<ProposedChange["edits"]>): string | null {
  let text = before;
  for (const e of edits) {
    if (e.old_string === "" || !text.includes(e.old_string)) return null;
    text = e.replace_all ? text.split(e.old_string).join(e.new_string) : text.replace(e.old_string, () => e.new_string);
  }
  return text;
}

/** One proposed change as the human sees it (before the size budget). */
function describeChange(ws: Workspace, c: Json): FileChange {
  const path = String(c["path"]);
  const proposed = (c["change"] ?? {}) as ProposedChange;
  let kind = (c["kind"] as FileChange["kind"] | undefined) ?? "update";
  const newPath = typeof c["new_path"] === "string" ? c["new_path"] : undefined;
  const named = newPath === undefined ? {} : { new_path: newPath };
  if (!allowed(ws, path) || (newPath !== undefined && !allowed(ws, newPath))) return { path, kind, ...named, diff: null, withheld: true };
  let diff: string | null = null;
  if (proposed.hunks !== undefined) diff = diffHeader(path, kind, newPath) + proposed.hunks;
  else if (proposed.before !== undefined) diff = unifiedDiff(path, proposed.before, null);
  else if (proposed.after !== undefined) diff = unifiedDiff(path, null, proposed.after);
  else if (proposed.write !== undefined || proposed.edits !== undefined) {
    // the provider did not say what is there now: read it
    const existing = readExisting(ws, path);
    if (!existing.shown) return { path, kind, ...named, diff: null, withheld: true };
    if (proposed.write !== undefined) {
      kind = existing.text === null ? "add" : "update";
      diff = unifiedDiff(path, existing.text, proposed.write);
    } else if (existing.text !== null) {
      const after = applyEdits(existing.text, proposed.edits!);
      diff = after === null ? null : unifiedDiff(path, existing.text, after);
    }
  }
  return { path, kind, ...named, diff };
}

function describeChanges(ws: Workspace, changes: Json[], redactor: Redactor): FileChange[] {
  let budget = DIFF_REQUEST_BYTES;
  return changes.map((c) => {
    const change = describeChange(ws, c);
    if (change.diff === null) return change;
    // what was read from disk is redacted like everything else a human sees
    const diff = redactor.redactText(change.diff);
    if (budget <= 0) return { ...change, diff: null, truncated: true };
    const cut = cutUtf8(diff, Math.min(DIFF_FILE_BYTES, budget));
    budget -= byteLength(cut.text);
    return cut.truncated ? { ...change, diff: cut.text, truncated: true } : { ...change, diff: cut.text };
  });
}

export function describeRequest(kind: "approval" | "question", payload: Json, ws: Workspace): Json {
  const out: Json = { ...payload };
  if (kind === "approval" && Array.isArray(payload["file_changes"])) {
    const redactor = new Redactor([ws.workdir.bridgePath, ws.realRoot]);
    let changes = describeChanges(ws, payload["file_changes"] as Json[], redactor);
    // many paths can still crowd the stored payload's limit (1 KiB left for the summary added below):
    // then the diffs go first, the paths and kinds stay
    if (byteLength(JSON.stringify({ ...out, file_changes: changes })) > LIMITS.max_interaction_bytes - 1024) {
      changes = changes.map((c) => (c.diff === null ? c : { ...c, diff: null, truncated: true }));
    }
    out["file_changes"] = changes;
  }
  // a question's payload keeps its own shape; its event carries the summary
  if (kind === "approval") out["summary"] = requestSummary(kind, out);
  return out;
}
