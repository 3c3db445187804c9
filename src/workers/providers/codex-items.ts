/**
 * What a codex thread item becomes on the Bridge's side (docs/runtimes.md#codex steps 4–5, docs/bridge-rpc.md
 * docs/events.md#event-types): the compact `item.started` / `item.completed` payload, and the final text of a turn.
 *
 * Offers:
 * - `itemPayload(item)`: `type`, plus `text`/`phase` for `agentMessage`, `command`, `cwd`, `status`,
 *   `exitCode` and the last 4 KiB of `output` for `commandExecution`, `status` and `changes[].path` for `fileChange`,
 *   `server`, `tool`, `status` and `error` (its message) for `mcpToolCall`; long free text
 *   cut to 32 KiB with `truncated: true`. Other items (the user's own message among them) carry only
 *   their type, so a prompt never reaches an event.
 * - `AgentMessages`: collects completed `agentMessage` items; `finalText()` = the last with phase
 *   `final_answer`, else the last, else "".
 * - `filePaths(item)`; `proposedChanges(item)` (what a file-change approval shows); type `CodexItem`.
 */
import * as v from "valibot";
import { tailUtf8 } from "../../shared/utf8.ts";
import { cutEventText } from "./adapter-kit.ts";
import type { ProposedFileChange } from "./types.ts";

const ChangesSchema = v.array(
  v.looseObject({
    path: v.string(),
    kind: v.optional(v.nullable(v.looseObject({ type: v.string(), move_path: v.optional(v.nullable(v.string())) }))),
    diff: v.optional(v.nullable(v.string())),
  }),
);

/** A command's output in its `item.completed` event: the last 4 KiB. */
export const COMMAND_OUTPUT_BYTES = 4096;

export const CodexItemSchema = v.looseObject({
  type: v.string(),
  id: v.optional(v.string()),
  text: v.optional(v.string()),
  phase: v.optional(v.nullable(v.string())),
  command: v.optional(v.nullable(v.string())),
  cwd: v.optional(v.nullable(v.string())),
  status: v.optional(v.nullable(v.string())),
  exitCode: v.optional(v.nullable(v.number())),
  aggregatedOutput: v.optional(v.nullable(v.string())),
  changes: v.optional(v.nullable(ChangesSchema)),
  server: v.optional(v.nullable(v.string())),
  tool: v.optional(v.nullable(v.string())),
  error: v.optional(v.nullable(v.looseObject({ message: v.optional(v.nullable(v.string())) }))),
});
export type CodexItem = v.InferOutput<typeof CodexItemSchema>;

export function filePaths(item: CodexItem): { path: string }[] {
  return (item.changes ?? []).map((c) => ({ path: c.path }));
}

/**
 * A fileChange item's changes as the approval proposes them: Codex's kind, and its `diff`, which is
 * the added content for an add, the removed content for a delete and unified hunks for an update.
 */
export function proposedChanges(item: CodexItem): ProposedFileChange[] {
  return (item.changes ?? []).map((c): ProposedFileChange => {
    const diff = c.diff ?? undefined;
    const type = c.kind?.type;
    const movedTo = c.kind?.move_path ?? undefined;
    if (type === "add") return { path: c.path, kind: "add", ...(diff === undefined ? {} : { change: { after: diff } }) };
    if (type === "delete") return { path: c.path, kind: "delete", ...(diff === undefined ? {} : { change: { before: diff } }) };
    const kind = movedTo === undefined ? "update" : "rename";
    return { path: c.path, kind, ...(movedTo === undefined ? {} : { new_path: movedTo }), ...(diff === undefined ? {} : { change: { hunks: diff } }) };
  });
}

export function itemPayload(item: CodexItem): Record<string, unknown> {
  const payload: Record<string, unknown> = { type: item.type };
  let truncated = false;
  const text = (key: string, value: string | null | undefined): void => {
    if (typeof value !== "string") return;
    const cut = cutEventText(value);
    payload[key] = cut.text;
    truncated ||= cut.truncated;
  };
  switch (item.type) {
    case "agentMessage":
      text("text", item.text);
      if (item.phase) payload["phase"] = item.phase;
      break;
    case "commandExecution":
      text("command", item.command);
      if (item.cwd) payload["cwd"] = item.cwd;
      if (item.status) payload["status"] = item.status;
      if (item.exitCode !== undefined && item.exitCode !== null) payload["exitCode"] = item.exitCode;
      if (typeof item.aggregatedOutput === "string" && item.aggregatedOutput !== "") {
        // the end of an output is what tells how a command went
        const tail = tailUtf8(item.aggregatedOutput, COMMAND_OUTPUT_BYTES);
        payload["output"] = tail.text;
        truncated ||= tail.truncated;
      }
      break;
    case "fileChange":
      if (item.status) payload["status"] = item.status;
      payload["changes"] = filePaths(item);
      break;
    case "mcpToolCall":
      // which server and tool, and how it went; never its arguments or result
      if (item.server) payload["server"] = item.server;
      if (item.tool) payload["tool"] = item.tool;
      if (item.status) payload["status"] = item.status;
      text("error", item.error?.message);
      break;
  }
  if (truncated) payload["truncated"] = true;
  return payload;
}

export class AgentMessages {
  private readonly messages: { text: string; phase: string | null }[] = [];

  add(item: CodexItem): void {
    if (item.type === "agentMessage") this.messages.push({ text: item.text ?? "", phase: item.phase ?? null });
  }

  finalText(): string {
    const final = this.messages.findLast((m) => m.phase === "final_answer");
    return (final ?? this.messages.at(-1))?.text ?? "";
  }
}
