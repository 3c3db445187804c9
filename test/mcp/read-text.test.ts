import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { appendFileSync, statSync, symlinkSync, truncateSync } from "node:fs";
import { callAudited, errorCode, type McpSession, structured } from "../helpers/mcp-client.ts";
import { startInProcess } from "../helpers/mcp-in-process.ts";
import { poll } from "../helpers/poll.ts";
import { BUN, type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

interface Page {
  workdir: string;
  path: string;
  start_line: number;
  end_line: number;
  content: string;
  bytes_returned: number;
  has_more: boolean;
  next_start_line: number | null;
  revision: string;
}

let dir: TempDir;
let mcp: McpSession;

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const read = async (path: string, args: Record<string, unknown> = {}, workdir = "repo") =>
  structured<Page>(await mcp.call("read_text_file", { workdir, path, ...args }));
const readCode = async (path: string, args: Record<string, unknown> = {}, workdir = "repo") =>
  errorCode(await mcp.call("read_text_file", { workdir, path, ...args }));
const lines = (n: number, width = 1) => Array.from({ length: n }, (_, i) => `${String(i + 1).padStart(width, "0")}\n`).join("");

beforeAll(async () => {
  dir = tempDir();
  const ws = `${dir.path}/ws`;
  dir.file("ws/three.txt", "l1\nl2\nl3\n");
  dir.file("ws/no-final-newline.txt", "a\nb");
  dir.file("ws/empty.txt", "");
  dir.file("ws/crlf.txt", Buffer.concat([BOM, Buffer.from("a\r\nb\r\n")]));
  dir.file("ws/ten.txt", lines(10));
  dir.file("ws/budget.txt", `${"x".repeat(31)}\n${"y".repeat(31)}\n${"z".repeat(31)}\n`);
  dir.file("ws/bom-budget.txt", Buffer.concat([BOM, Buffer.from(`${"x".repeat(63)}\n`)]));
  dir.file("ws/long-first.txt", `${"x".repeat(100)}\nshort\n`);
  dir.file("ws/nul-head.txt", Buffer.from("abc\0def\n"));
  dir.file("ws/nul-late.txt", Buffer.concat([Buffer.from(lines(400, 4)), Buffer.from("late\0nul\n")]));
  dir.file("ws/nul-head-long.txt", Buffer.from(`\0${"x".repeat(100)}\n`));
  dir.file("ws/latin1.txt", Buffer.concat([Buffer.from("ok\n"), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a])]));
  dir.file("ws/overlong.txt", Buffer.from([0xc0, 0x80, 0x0a]));
  dir.file("ws/surrogate.txt", Buffer.from([0xed, 0xa0, 0x80, 0x0a]));
  dir.file("ws/invalid-long.txt", Buffer.concat([Buffer.alloc(100, 0xff), Buffer.from("\n")]));
  dir.file("ws/utf8.txt", "héllo wörld 😀\n");
  dir.file("ws/dir x/fé.txt", "percent\n");
  dir.file("ws/sub/file.txt", "in sub\n");
  dir.file("ws/.hidden", "h\n");
  dir.file("ws/secret-content.txt", "zq-secret-content-91c\n");
  for (const key of ["id_ed25519_sk", "id_ecdsa_sk", "id_xmss", "id_github", "id_rsa.pub", "sub/id_ed25519"]) dir.file(`ws/${key}`, "zq-key-material\n");
  // 1024 bytes of text, then 200 MiB of NUL (sparse) before the first newline, then a line with a NUL.
  dir.file("ws/sparse.bin", "x".repeat(1024));
  truncateSync(`${ws}/sparse.bin`, 1024 + 200 * 2 ** 20);
  appendFileSync(`${ws}/sparse.bin`, "\n\0tail\n");
  symlinkSync("three.txt", `${ws}/link.txt`);
  symlinkSync("sub", `${ws}/linkdir`);
  Bun.spawnSync(["mkfifo", `${ws}/fifo`]);
  const config = writeConfig(dir.path, {
    workdirs: [
      { slot: 1, alias: "repo", path: ws },
      { slot: 2, alias: "small", path: ws, max_read_bytes: 64, max_read_lines: 5 },
    ],
  });
  mcp = await startInProcess(config);
});
afterAll(async () => {
  await mcp?.close();
  dir?.remove();
});

describe("read_text_file: pages", () => {
  test("a whole small file comes back exactly, with its revision", async () => {
    const page = await read("three.txt");
    expect(page).toEqual({
      workdir: "repo",
      path: "three.txt",
      start_line: 1,
      end_line: 3,
      content: "l1\nl2\nl3\n",
      bytes_returned: 9,
      has_more: false,
      next_start_line: null,
      revision: page.revision,
    });
    const stat = structured<{ revision: string }>(await mcp.call("stat_file", { workdir: "repo", path: "three.txt" }));
    expect(page.revision).toBe(stat.revision);
  });
  test("max_lines pages through whole lines with has_more and next_start_line", async () => {
    expect(await read("three.txt", { max_lines: 2 })).toMatchObject({ end_line: 2, content: "l1\nl2\n", has_more: true, next_start_line: 3 });
    expect(await read("three.txt", { start_line: 3 })).toMatchObject({ start_line: 3, end_line: 3, content: "l3\n", has_more: false, next_start_line: null });
  });
  test("reading past the end is an empty page, not an error", async () => {
    expect(await read("three.txt", { start_line: 4 })).toMatchObject({ content: "", end_line: 3, has_more: false, next_start_line: null, bytes_returned: 0 });
    expect(await read("three.txt", { start_line: 10 })).toMatchObject({ content: "", end_line: 9, has_more: false });
  });
  test("an empty file has zero lines; a final line without \\n is a line; a trailing \\n adds none", async () => {
    expect(await read("empty.txt")).toMatchObject({ content: "", start_line: 1, end_line: 0, has_more: false });
    expect(await read("no-final-newline.txt")).toMatchObject({ content: "a\nb", end_line: 2, has_more: false });
    expect(await read("no-final-newline.txt", { start_line: 2 })).toMatchObject({ content: "b", end_line: 2 });
  });
  test("the BOM is stripped from line 1 and not counted; \\r\\n is kept", async () => {
    expect(await read("crlf.txt")).toMatchObject({ content: "a\r\nb\r\n", bytes_returned: 6, end_line: 2 });
    expect(await read("bom-budget.txt", {}, "small")).toMatchObject({ bytes_returned: 64, end_line: 1 });
  });
  test("multi-byte text is returned exactly and counted in bytes", async () => {
    expect(await read("utf8.txt")).toMatchObject({ content: "héllo wörld 😀\n", bytes_returned: Buffer.byteLength("héllo wörld 😀\n") });
  });
});

describe("read_text_file: caps and budgets", () => {
  test("max_lines is silently capped at max_read_lines", async () => {
    expect(await read("ten.txt", { max_lines: 1000 }, "small")).toMatchObject({ end_line: 5, has_more: true, next_start_line: 6 });
  });
  test("the page holds as many whole lines as fit max_read_bytes, never a cut line", async () => {
    // three lines of 32 bytes against a 64-byte budget: exactly two fit
    const page = await read("budget.txt", {}, "small");
    expect(page).toMatchObject({ end_line: 2, bytes_returned: 64, has_more: true, next_start_line: 3 });
    expect(await read("budget.txt", { start_line: 3 }, "small")).toMatchObject({ end_line: 3, has_more: false });
  });
  test("a start line that alone exceeds the budget is LINE_TOO_LARGE; later lines still read", async () => {
    expect(await readCode("long-first.txt", {}, "small")).toBe("LINE_TOO_LARGE");
    expect(await read("long-first.txt", { start_line: 2 }, "small")).toMatchObject({ content: "short\n" });
  });
});

describe("read_text_file: content checks and precedence", () => {
  test("a NUL in the first 1024 bytes or in the returned slice is BINARY_FILE", async () => {
    expect(await readCode("nul-head.txt")).toBe("BINARY_FILE");
    expect(await readCode("nul-late.txt", { start_line: 395 })).toBe("BINARY_FILE");
  });
  test("a NUL past the first 1024 bytes and outside the slice does not matter", async () => {
    expect(await read("nul-late.txt", { max_lines: 10 })).toMatchObject({ end_line: 10, has_more: true });
  });
  test("a slice that is not strict UTF-8 is UNSUPPORTED_TEXT_ENCODING (Latin-1, overlong, surrogate)", async () => {
    expect(await readCode("latin1.txt")).toBe("UNSUPPORTED_TEXT_ENCODING");
    expect(await readCode("overlong.txt")).toBe("UNSUPPORTED_TEXT_ENCODING");
    expect(await readCode("surrogate.txt")).toBe("UNSUPPORTED_TEXT_ENCODING");
    expect(await read("latin1.txt", { max_lines: 1 })).toMatchObject({ content: "ok\n" });
  });
  test("BINARY_FILE wins over LINE_TOO_LARGE, which wins over UNSUPPORTED_TEXT_ENCODING", async () => {
    expect(await readCode("nul-head-long.txt", {}, "small")).toBe("BINARY_FILE");
    expect(await readCode("invalid-long.txt", {}, "small")).toBe("LINE_TOO_LARGE");
  });
  test("FILE_CHANGED_DURING_READ when the file changes while it is read, and it wins over BINARY_FILE", async () => {
    // Its first bytes are text, so reading line 2 seeks through 200 MiB before the NUL of line 2
    // decides, while another process keeps changing its ctime. Unchanged, the same read is BINARY_FILE.
    expect(await readCode("sparse.bin", { start_line: 2 })).toBe("BINARY_FILE");
    const path = `${dir.path}/ws/sparse.bin`;
    const toucher = Bun.spawn([BUN, "-e", `const fs = require("fs"); for (;;) fs.utimesSync(${JSON.stringify(path)}, 1, 1);`], {
      stdout: "ignore",
      stderr: "ignore",
    });
    try {
      // the toucher runs once the file's ctime moves
      const before = statSync(path).ctimeMs;
      await poll(() => statSync(path).ctimeMs !== before, 10_000, "the toucher changing the file's ctime");
      const codes: (string | null)[] = [];
      for (let i = 0; i < 5 && !codes.includes("FILE_CHANGED_DURING_READ"); i++) codes.push(await readCode("sparse.bin", { start_line: 2 }));
      expect(codes).toContain("FILE_CHANGED_DURING_READ");
      expect(codes.every((c) => c === "FILE_CHANGED_DURING_READ" || c === "BINARY_FILE")).toBe(true);
    } finally {
      toucher.kill();
      await toucher.exited;
    }
  }, 30_000);
});

describe("read_text_file: targets", () => {
  const cases: [string, string, string][] = [
    ["the root is NOT_A_FILE", "", "NOT_A_FILE"],
    ["a path normalizing to the root is NOT_A_FILE", "sub/..", "NOT_A_FILE"],
    ["a directory is NOT_A_FILE", "sub", "NOT_A_FILE"],
    ["a final symlink is SYMLINK_NOT_ALLOWED", "link.txt", "SYMLINK_NOT_ALLOWED"],
    ["a symlinked parent is SYMLINK_NOT_ALLOWED", "linkdir/file.txt", "SYMLINK_NOT_ALLOWED"],
    ["a FIFO is UNSUPPORTED_FILE_TYPE, without blocking", "fifo", "UNSUPPORTED_FILE_TYPE"],
    ["a missing file is PATH_NOT_FOUND", "missing.txt", "PATH_NOT_FOUND"],
    ["a file as a parent is NOT_A_DIRECTORY", "three.txt/x", "NOT_A_DIRECTORY"],
    ["a hidden file is HIDDEN_PATH_NOT_ALLOWED", ".hidden", "HIDDEN_PATH_NOT_ALLOWED"],
    ["an escaping path is PATH_OUTSIDE_WORKDIR", "../ws/three.txt", "PATH_OUTSIDE_WORKDIR"],
  ];
  for (const [rule, path, code] of cases) {
    test(rule, async () => {
      expect(await readCode(path)).toBe(code);
    });
  }
  test("every SSH key name (id_*) is DENIED_PATH: other algorithms, renamed keys and the .pub halves too", async () => {
    for (const name of ["id_ed25519_sk", "id_ecdsa_sk", "id_xmss", "id_github", "id_rsa.pub", "sub/id_ed25519"]) {
      const r = await mcp.call("read_text_file", { workdir: "repo", path: name });
      expect(errorCode(r)).toBe("DENIED_PATH");
      expect(JSON.stringify(r)).not.toContain("zq-key-material");
    }
    const listed = structured<{ entries: { name: string }[] }>(await mcp.call("list_directory", { workdir: "repo", path: "" })).entries.map((e) => e.name);
    expect(listed.filter((n) => n.startsWith("id_"))).toEqual([]);
  });
  test("stat_file reports the symlink that reads refuse", async () => {
    expect(structured(await mcp.call("stat_file", { workdir: "repo", path: "link.txt" }))).toMatchObject({ type: "symlink", size: null });
  });
});

describe("read_text_file: schema", () => {
  test("start_line and max_lines default to 1 and 200 and must be at least 1", async () => {
    const { tools } = await mcp.client.listTools();
    const schema = tools.find((t) => t.name === "read_text_file")!.inputSchema as { properties: Record<string, unknown>; required: string[] };
    expect(schema.properties["start_line"]).toMatchObject({ type: "integer", minimum: 1, default: 1 });
    expect(schema.properties["max_lines"]).toMatchObject({ type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER, default: 200 });
    expect(schema.required.sort()).toEqual(["path", "workdir"]);
    expect(await readCode("three.txt", { start_line: 0 })).toBe("INVALID_ARGUMENT");
    expect(await readCode("three.txt", { max_lines: 0 })).toBe("INVALID_ARGUMENT");
    expect(errorCode(await mcp.call("read_text_file", { workdir: "repo" }))).toBe("INVALID_ARGUMENT");
  });
});

describe("read_text_file audit", () => {
  test("tool_call carries bytes_returned, start_line, end_line and has_more, never content", async () => {
    const { record } = await callAudited(mcp, "read_text_file", { workdir: "repo", path: "secret-content.txt" });
    expect(record).toMatchObject({
      tool: "read_text_file",
      success: true,
      path: "secret-content.txt",
      bytes_returned: 22,
      start_line: 1,
      end_line: 1,
      has_more: false,
    });
    expect(mcp.stderr()).not.toContain("zq-secret-content");
  });
});

describe("resource serverfs://{workdir}/{path}", () => {
  /** The JSON-RPC error of a failed read: its code and its message as sent on the wire. */
  async function resourceError(uri: string): Promise<{ code: number; message: string }> {
    try {
      await mcp.client.readResource({ uri });
    } catch (e) {
      const err = e as { code: number; message: string };
      // The SDK client prefixes "MCP error <code>: " to the wire message.
      return { code: err.code, message: err.message.replace(/^MCP error -?\d+: /, "") };
    }
    throw new Error("the read succeeded");
  }

  test("the template is listed and no concrete resources are", async () => {
    const { resourceTemplates } = await mcp.client.listResourceTemplates();
    expect(resourceTemplates).toEqual([expect.objectContaining({ uriTemplate: "serverfs://{workdir}/{path}", mimeType: "text/plain" })]);
    expect((await mcp.client.listResources()).resources).toEqual([]);
  });
  test("a read returns the whole text as one text/plain content", async () => {
    const r = await mcp.client.readResource({ uri: "serverfs://repo/sub/file.txt" });
    expect(r.contents).toEqual([{ uri: "serverfs://repo/sub/file.txt", mimeType: "text/plain", text: "in sub\n" }]);
  });
  test("the path is percent-decoded once", async () => {
    const r = await mcp.client.readResource({ uri: "serverfs://repo/dir%20x/f%C3%A9.txt" });
    expect(r.contents[0]).toMatchObject({ text: "percent\n" });
    expect(await resourceError("serverfs://repo/dir%2520x/f%C3%A9.txt")).toMatchObject({ code: -32002 });
  });
  test("content that needs more than one page is RESOURCE_TOO_LARGE (lines or bytes)", async () => {
    expect(await resourceError("serverfs://small/ten.txt")).toEqual({
      code: -32603,
      message: "RESOURCE_TOO_LARGE: small:ten.txt does not fit in one page; use read_text_file",
    });
    expect((await resourceError("serverfs://small/budget.txt")).message).toMatch(/^RESOURCE_TOO_LARGE: /);
    expect((await resourceError("serverfs://small/long-first.txt")).message).toMatch(/^RESOURCE_TOO_LARGE: /);
    expect((await mcp.client.readResource({ uri: "serverfs://small/three.txt" })).contents[0]).toMatchObject({ text: "l1\nl2\nl3\n" });
  });
  test("%00 is ACCESS_DENIED", async () => {
    expect(await resourceError("serverfs://repo/three.txt%00")).toEqual({ code: -32603, message: "ACCESS_DENIED: the path contains a NUL character" });
  });
  test("WORKDIR_NOT_FOUND and PATH_NOT_FOUND use -32002; other codes use -32603; messages are exactly CODE: message", async () => {
    expect(await resourceError("serverfs://nope/three.txt")).toEqual({
      code: -32002,
      message: "WORKDIR_NOT_FOUND: no workdir has this alias; call list_workdirs",
    });
    expect(await resourceError("serverfs://repo/missing.txt")).toEqual({ code: -32002, message: "PATH_NOT_FOUND: repo:missing.txt does not exist" });
    const others: [string, string][] = [
      ["serverfs://repo/.hidden", "HIDDEN_PATH_NOT_ALLOWED"],
      ["serverfs://repo/nul-head.txt", "BINARY_FILE"],
      ["serverfs://repo/link.txt", "SYMLINK_NOT_ALLOWED"],
      ["serverfs://repo/sub", "NOT_A_FILE"],
      ["serverfs://repo/fifo", "UNSUPPORTED_FILE_TYPE"],
      ["serverfs://repo/..%2F..%2Fetc%2Fpasswd", "PATH_OUTSIDE_WORKDIR"],
      ["serverfs://repo/latin1.txt", "UNSUPPORTED_TEXT_ENCODING"],
    ];
    for (const [uri, code] of others) {
      const err = await resourceError(uri);
      expect([uri, err.code, err.message.split(": ")[0]]).toEqual([uri, -32603, code]);
      expect(err.message).toMatch(/^[A-Z][A-Z0-9_]{2,}: \S/);
      expect(err.message).not.toContain(dir.path);
    }
  });
});
