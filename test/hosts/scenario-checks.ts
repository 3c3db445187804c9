/**
 * What the model must have seen of test/hosts/scenario.ts, whichever host carried it: each result is
 * the tool's own JSON (or `CODE: message` for an error), marked an error exactly when it is one.
 */
import { expect } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { CODE_PATTERN } from "../helpers/mcp-client.ts";
import { RESULT_CHUNK, type SeenResult, SPOOLED_UNIT, SPOOLED_UNITS } from "./scenario.ts";

/** How Claude Code replaces a result over its inline limit (docs/hosts.md). */
export const PERSISTED = "<persisted-output>";

const ERRORS: Record<string, string> = { read_missing: "PATH_NOT_FOUND", edit_stale: "REVISION_CONFLICT" };

export function expectScenarioResults(seen: Map<string, SeenResult>, workspace: string): void {
  const json = (label: string) => {
    const r = seen.get(label);
    expect({ label, isError: r?.isError }).toEqual({ label, isError: false });
    return JSON.parse(r!.text) as Record<string, unknown>;
  };
  for (const [label, code] of Object.entries(ERRORS)) {
    const r = seen.get(label)!;
    expect({ label, isError: r.isError, code: CODE_PATTERN.exec(r.text)?.[1] }).toEqual({ label, isError: true, code });
    expect(r.text.length).toBeGreaterThan(code.length + 2);
  }
  expect(json("list_workdirs")["workdirs"]).toEqual([expect.objectContaining({ alias: "repo" })]);
  expect(JSON.stringify(json("list_directory")["entries"])).toContain("README.md");
  expect(json("stat_file")).toMatchObject({ path: "README.md", revision: expect.any(String) });
  expect(json("read_text_file")).toMatchObject({ content: "# demo\n", has_more: false });
  expect(json("find_files")["matches"]).toEqual([{ path: "README.md" }]);
  expect(json("search_text")["matches"]).toEqual([expect.objectContaining({ path: "README.md", line: 1, text: "# demo" })]);
  expect(json("create_directory")).toMatchObject({ path: "made" });
  expect(json("create_text_file")).toMatchObject({ path: "made/note.txt", created: true });
  const edited = json("edit_text_file");
  expect(edited["revision"]).not.toBe(json("create_text_file")["revision"]);
  expect(json("delete_file")).toMatchObject({ path: "made/note.txt" });
  expect(json("delete_directory")).toMatchObject({ path: "made" });
  expect(existsSync(join(workspace, "made"))).toBe(false);
  expect(JSON.stringify(json("list_agent_runtimes"))).toContain('"fake"');
  // a spooled task's 64 KiB preview is more than Claude Code inlines: the model gets a 2 KB preview
  // of the JSON, where every small field (before final_response) is still visible
  const task = seen.get("get_agent_task")!;
  if (task.text.startsWith(PERSISTED)) {
    for (const field of ['"status":"succeeded"', '"final_response_truncated":true', '"storage":"spool"', '"retrievable":true'])
      expect(task.text).toContain(field);
  } else expect(json("get_agent_task")).toMatchObject({ status: "succeeded", result: { storage: "spool" } });
  const chunk = json("read_agent_task_result");
  const whole = SPOOLED_UNIT.repeat(SPOOLED_UNITS);
  expect(chunk).toMatchObject({ offset_bytes: 0, next_offset_bytes: RESULT_CHUNK, eof: false });
  expect(Buffer.from(whole).subarray(0, RESULT_CHUNK).toString("utf8").startsWith(String(chunk["text"]))).toBe(true);
  expect(Buffer.byteLength(String(chunk["text"]))).toBe(RESULT_CHUNK);
}
