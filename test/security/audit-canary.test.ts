/**
 * The audit log is metadata only (docs/mcp-tools.md#audit-log, docs/mcp-tools.md#results-and-errors): one session calls every tool, in
 * successes and failures, with a distinct canary string in every place the contract says must
 * never be logged — file contents, created content, search queries, find patterns, search globs,
 * edit old/new text, upload payloads (raw and base64), downloaded bytes (base64), deny globs — and
 * with the workdir roots themselves under a canary-named directory. All of stderr is scanned; then
 * every call must have produced exactly one `tool_call` record carrying exactly the docs/mcp-tools.md#audit-log fields.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { callAudited, errorCode, type McpSession, startStdio } from "../helpers/mcp-client.ts";
import { BINARY_TOOLS, FILESYSTEM_TOOLS } from "../helpers/tool-names.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

const ROOT_CANARY = "ROOTCANARY";
const b64 = (s: string) => Buffer.from(s).toString("base64");

/** Each names where it was put; none may reach stderr, nor (except contents) an error text. */
const C = {
  content: "CONTENT-CANARY-1a",
  query: "QUERY-CANARY-2b",
  pattern: "PATTERN-CANARY-3c",
  glob: "GLOB-CANARY-4d",
  oldText: "OLD-CANARY-5e",
  newText: "NEW-CANARY-6f",
  missingOld: "MISSINGOLD-CANARY-7a",
  missingNew: "MISSINGNEW-CANARY-8b",
  created: "CREATED-CANARY-9c",
  rejected: "REJECTED-CANARY-0d",
  upload: "UPLOAD-CANARY-1e",
  download: "DOWNLOAD-CANARY-2f",
  denyGlob: "DENYGLOB-CANARY-3a",
  invalid: "INVALIDARG-CANARY-4b",
  resource: "RESOURCE-CANARY-5c",
};
/** The base64 forms a payload or a download travels in. */
const B64_CANARIES = [b64(C.upload), b64(`${C.download}\0bytes`), b64(`${C.upload}-over`)];

const TOOLS = [...FILESYSTEM_TOOLS, ...BINARY_TOOLS];

/** docs/mcp-tools.md#audit-log extras per tool, each with the result field it reports (null: no single field). */
const EXTRAS: Record<string, Record<string, string | null>> = {
  list_workdirs: { returned: null },
  list_directory: { returned: "returned", has_more: "has_more" },
  find_files: { returned: "returned", truncated: "truncated" },
  search_text: { returned: "returned", truncated: "truncated" },
  read_text_file: { bytes_returned: "bytes_returned", start_line: "start_line", end_line: "end_line", has_more: "has_more" },
  stat_file: { type: "type" },
  download_binary_file: { bytes_returned: "size", mime_type: "mime_type", revision: "revision" },
  create_text_file: { bytes_written: "bytes_written", revision: "revision" },
  upload_binary_file: { bytes_written: "bytes_written", revision: "revision" },
  edit_text_file: { edit_count: "edits_applied", bytes_before: "bytes_before", bytes_after: "bytes_after", revision: "revision" },
  delete_file: { bytes_deleted: "bytes_deleted", revision: "revision_deleted" },
  create_directory: { revision: "revision" },
  delete_directory: { revision: "revision_deleted" },
};

interface Made {
  tool: string;
  args: Record<string, unknown>;
  result: CallToolResult;
  record: Record<string, unknown>;
  /** The normalized path the record must carry, or undefined when confinement never succeeded. */
  path: string | undefined;
}

let dir: TempDir;
let mcp: McpSession;
const made: Made[] = [];

/** One call; `path` is what the audit record must show (absent when undefined). */
async function run(tool: string, args: Record<string, unknown>, want: { code: string | null; path?: string }): Promise<CallToolResult> {
  const { result, record } = await callAudited(mcp, tool, args);
  expect([tool, errorCode(result)]).toEqual([tool, want.code]);
  made.push({ tool, args, result, record, path: want.path });
  return result;
}

const revisionOf = (r: CallToolResult) => (r.structuredContent as { revision: string }).revision;

async function session(): Promise<void> {
  const ws = "ws";
  await run("list_workdirs", {}, { code: null });
  await run("list_directory", { workdir: ws }, { code: null, path: "" });
  await run("list_directory", { workdir: ws, path: "../outside" }, { code: "PATH_OUTSIDE_WORKDIR" });
  await run("list_directory", { workdir: ws, path: "notes.txt" }, { code: "NOT_A_DIRECTORY", path: "notes.txt" });

  await run("find_files", { workdir: ws, pattern: `*${C.pattern}*` }, { code: null, path: "" });
  await run("find_files", { workdir: ws, path: "./dir/", pattern: "*.txt" }, { code: null, path: "dir" });
  await run("find_files", { workdir: ws, path: "nope", pattern: `${C.pattern}-2` }, { code: "PATH_NOT_FOUND", path: "nope" });
  await run("find_files", { workdir: ws, pattern: "" }, { code: "INVALID_ARGUMENT" });

  await run("search_text", { workdir: ws, query: C.query }, { code: null, path: "" });
  await run("search_text", { workdir: ws, query: C.query, glob: `${C.glob}-*.txt` }, { code: null, path: "" });
  await run("search_text", { workdir: ws, query: C.query, glob: `!${C.glob}/**`, case_sensitive: false }, { code: null, path: "" });
  await run("search_text", { workdir: ws, path: "notes.txt", query: C.query }, { code: "NOT_A_DIRECTORY", path: "notes.txt" });
  await run("search_text", { workdir: ws, query: `${C.query}\nsecond line` }, { code: "INVALID_ARGUMENT" });

  await run("read_text_file", { workdir: ws, path: "notes.txt" }, { code: null, path: "notes.txt" });
  await run("read_text_file", { workdir: ws, path: "blob.bin" }, { code: "BINARY_FILE", path: "blob.bin" });
  await run("read_text_file", { workdir: ws, path: "/etc/passwd" }, { code: "PATH_OUTSIDE_WORKDIR" });
  const resource = await mcp.client.readResource({ uri: "serverfs://ws/resource.txt" });
  expect(JSON.stringify(resource)).toContain(C.resource);

  const notes = await run("stat_file", { workdir: ws, path: "dir/../notes.txt" }, { code: null, path: "notes.txt" });
  await run("stat_file", { workdir: ws, path: ".hidden" }, { code: "HIDDEN_PATH_NOT_ALLOWED" });
  await run("stat_file", { workdir: "nope", path: "notes.txt" }, { code: "WORKDIR_NOT_FOUND" });

  await run("download_binary_file", { workdir: ws, path: "blob.bin" }, { code: null, path: "blob.bin" });
  await run("download_binary_file", { workdir: "ro", path: "blob.bin" }, { code: "BINARY_TRANSFER_DISABLED" });

  const created = await run("create_text_file", { workdir: ws, path: "created.txt", content: `${C.created}\n` }, { code: null, path: "created.txt" });
  await run("create_text_file", { workdir: ws, path: "created.txt", content: C.rejected }, { code: "PATH_ALREADY_EXISTS", path: "created.txt" });
  await run("create_text_file", { workdir: ws, path: "nul.txt", content: `${C.rejected}\0` }, { code: "BINARY_CONTENT_NOT_ALLOWED", path: "nul.txt" });
  await run("create_text_file", { workdir: "ro", path: "x.txt", content: C.rejected }, { code: "WORKDIR_READ_ONLY" });
  await run("create_text_file", { workdir: ws, path: "x.txt", content: C.rejected, extra: C.invalid }, { code: "INVALID_ARGUMENT" });

  const edits = [{ old_text: C.oldText, new_text: C.newText }];
  await run("edit_text_file", { workdir: ws, path: "notes.txt", expected_revision: revisionOf(notes), edits }, { code: null, path: "notes.txt" });
  await run(
    "edit_text_file",
    { workdir: ws, path: "notes.txt", expected_revision: revisionOf(notes), edits: [{ old_text: C.missingOld, new_text: C.missingNew }] },
    { code: "REVISION_CONFLICT", path: "notes.txt" },
  );
  const fresh = await run("stat_file", { workdir: ws, path: "notes.txt" }, { code: null, path: "notes.txt" });
  await run(
    "edit_text_file",
    { workdir: ws, path: "notes.txt", expected_revision: revisionOf(fresh), edits: [{ old_text: C.missingOld, new_text: C.missingNew }] },
    { code: "EDIT_CONFLICT", path: "notes.txt" },
  );
  await run(
    "edit_text_file",
    { workdir: ws, path: "notes.txt", expected_revision: revisionOf(fresh), edits: [{ old_text: C.missingOld, new_text: `${C.missingNew}\0` }] },
    { code: "BINARY_CONTENT_NOT_ALLOWED", path: "notes.txt" },
  );
  await run("edit_text_file", { workdir: ws, path: "notes.txt", expected_revision: revisionOf(fresh), edits: C.invalid }, { code: "INVALID_ARGUMENT" });

  await run("delete_file", { workdir: ws, path: "created.txt", expected_revision: "v1:0000000000000000" }, { code: "REVISION_CONFLICT", path: "created.txt" });
  await run("delete_file", { workdir: ws, path: "created.txt", expected_revision: revisionOf(created) }, { code: null, path: "created.txt" });

  const madeDir = await run("create_directory", { workdir: ws, path: "newdir/" }, { code: null, path: "newdir" });
  await run("create_directory", { workdir: ws, path: "newdir" }, { code: "PATH_ALREADY_EXISTS", path: "newdir" });
  await run("delete_directory", { workdir: ws, path: "dir", expected_revision: revisionOf(madeDir) }, { code: "REVISION_CONFLICT", path: "dir" });
  await run("delete_directory", { workdir: ws, path: "newdir", expected_revision: revisionOf(madeDir) }, { code: null, path: "newdir" });

  const up = await run("upload_binary_file", { workdir: ws, path: "up.bin", data_base64: b64(C.upload) }, { code: null, path: "up.bin" });
  await run(
    "upload_binary_file",
    { workdir: ws, path: "up.bin", data_base64: b64(`${C.upload}-over`), overwrite: true, expected_revision: revisionOf(up) },
    { code: null, path: "up.bin" },
  );
  await run("upload_binary_file", { workdir: ws, path: "bad.bin", data_base64: `${C.rejected}!!` }, { code: "INVALID_BASE64", path: "bad.bin" });
  await run(
    "upload_binary_file",
    { workdir: ws, path: "up.bin", data_base64: b64(C.upload), overwrite: true },
    { code: "EXPECTED_REVISION_REQUIRED", path: "up.bin" },
  );
}

beforeAll(async () => {
  dir = tempDir(`serverfs-${ROOT_CANARY}-`);
  dir.file("ws/notes.txt", `first ${C.content}\n${C.query} here\n${C.oldText}\n`);
  dir.file(`ws/${C.glob}/inside.txt`, `${C.query}\n`);
  dir.file("ws/dir/a.txt", `${C.content}\n`);
  dir.file("ws/blob.bin", `${C.download}\0bytes`);
  dir.file("ws/resource.txt", `${C.resource}\n`);
  dir.file("ws/.hidden", `${C.content}\n`);
  dir.file("ro/blob.bin", `${C.download}\0bytes`);
  const config = writeConfig(dir.path, {
    server: { log_level: "debug" },
    defaults: { extra_deny_globs: [`${C.denyGlob}-*`] },
    workdirs: [
      { slot: 1, alias: "ws", path: `${dir.path}/ws`, read_only: false, binary_transfer_enabled: true, extra_deny_globs: [`${C.denyGlob}-ws`] },
      { slot: 2, alias: "ro", path: `${dir.path}/ro` },
    ],
  });
  mcp = await startStdio(config);
  await session();
}, 60_000);

afterAll(async () => {
  await mcp?.close();
  dir.remove();
});

const textOf = (r: CallToolResult) => (r.content[0] as { text: string }).text;

describe("audit log: metadata only", () => {
  test("the session called every tool, each in at least one success and one failure", () => {
    for (const tool of TOOLS) {
      const calls = made.filter((m) => m.tool === tool);
      expect([tool, calls.some((m) => !m.result.isError)]).toEqual([tool, true]);
      if (tool !== "list_workdirs") expect([tool, calls.some((m) => m.result.isError)]).toEqual([tool, true]);
    }
  });

  test("the canaries did travel: results carry contents, hits and payloads", () => {
    const stdout = made.map((m) => JSON.stringify(m.result)).join("\n");
    for (const s of [C.content, C.query, b64(`${C.download}\0bytes`)]) expect(stdout).toContain(s);
    expect(dir.path).toContain(ROOT_CANARY);
  });

  test("stderr holds no canary, no base64 payload, no host path, no raw OS error", () => {
    const stderr = mcp.stderr();
    expect(stderr.length).toBeGreaterThan(0);
    for (const s of [...Object.values(C), ...B64_CANARIES, ROOT_CANARY, dir.path, "/proc/"]) {
      expect([s, stderr.includes(s)]).toEqual([s, false]);
    }
    for (const line of stderr.split("\n").filter((l) => l !== "")) expect(line.startsWith("{")).toBe(true);
  });

  test("error texts never carry contents, queries, patterns, globs, edit texts, payloads or host paths", () => {
    for (const m of made.filter((x) => x.result.isError)) {
      const text = textOf(m.result);
      for (const s of [...Object.values(C), ...B64_CANARIES, ROOT_CANARY, "/proc/"]) expect([m.tool, text, text.includes(s)]).toEqual([m.tool, text, false]);
    }
  });

  test("exactly one tool_call record per call, in call order", async () => {
    // Records are written in call order: once the record of one more call is there, a late duplicate
    // of an earlier one would be too. That marker call is the last record, and is left out.
    const marker = await callAudited(mcp, "list_workdirs");
    const records = mcp.audit().filter((r) => r["event"] === "tool_call");
    expect(records.at(-1)).toEqual(marker.record);
    expect(records.slice(0, -1).map((r) => r["tool"])).toEqual(made.map((m) => m.tool));
  });

  test("each record carries exactly the common fields and, on success, the tool's extras with the result's values", () => {
    for (const m of made) {
      const r = m.record;
      const extras = EXTRAS[m.tool]!;
      const s = (m.result.structuredContent ?? {}) as Record<string, unknown>;
      const label = `${m.tool} ${JSON.stringify(m.args).slice(0, 80)}`;
      expect([label, r["timestamp"]]).toEqual([label, expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)]);
      expect([label, r["level"], r["event"], r["tool"]]).toEqual([label, "INFO", "tool_call", m.tool]);
      const duration = r["duration_ms"] as number;
      expect([label, typeof duration, Math.round(duration * 10) / 10]).toEqual([label, "number", duration]);
      expect([label, r["success"]]).toEqual([label, !m.result.isError]);
      expect([label, r["error_code"]]).toEqual([label, errorCode(m.result) ?? undefined]);
      expect([label, r["workdir"]]).toEqual([label, m.args["workdir"]]);
      expect([label, r["path"]]).toEqual([label, m.path]);
      // the revision the 2025-era SDK client negotiated
      expect([label, r["protocol_version"]]).toEqual([label, "2025-11-25"]);

      const common = ["timestamp", "level", "event", "tool", "duration_ms", "protocol_version", "success", "error_code", "workdir", "path"];
      const unexpected = Object.keys(r).filter((k) => !common.includes(k) && !(k in extras));
      expect([label, unexpected]).toEqual([label, []]);
      if (m.result.isError) continue;
      for (const [key, resultKey] of Object.entries(extras)) {
        expect([label, key, key in r]).toEqual([label, key, true]);
        if (resultKey !== null) expect([label, key, r[key]]).toEqual([label, key, s[resultKey]]);
      }
    }
  });
});
