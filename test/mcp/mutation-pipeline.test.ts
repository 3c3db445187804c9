import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { lstatSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { callAudited, errorCode, type McpSession, structured } from "../helpers/mcp-client.ts";
import { startInProcess } from "../helpers/mcp-in-process.ts";
import { FILESYSTEM_TOOLS } from "../helpers/tool-names.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

let dir: TempDir;
let mcp: McpSession;
let rw: string;

// the filesystem group ends with the five mutation tools
const MUTATION_TOOLS = FILESYSTEM_TOOLS.slice(-5);

/** Arguments that pass the schema of each mutation tool, for `path`. */
const argsFor = (tool: string, workdir: string, path: string): Record<string, unknown> => {
  switch (tool) {
    case "create_text_file":
      return { workdir, path, content: "x" };
    case "edit_text_file":
      return { workdir, path, expected_revision: "v1:0000000000000000", edits: [{ old_text: "a", new_text: "b" }] };
    case "create_directory":
      return { workdir, path };
    default:
      return { workdir, path, expected_revision: "v1:0000000000000000" };
  }
};

/** Every name below `root`, recursively, as relative paths. */
function allNames(root: string, rel = ""): string[] {
  return readdirSync(join(root, rel), { withFileTypes: true }).flatMap((d) => {
    const p = rel === "" ? d.name : `${rel}/${d.name}`;
    return d.isDirectory() && !d.isSymbolicLink() ? [p, ...allNames(root, p)] : [p];
  });
}

beforeAll(async () => {
  dir = tempDir();
  rw = dir.dir("rw");
  dir.file("rw/existing.txt", "old\n");
  dir.file("rw/file-in-chain", "not a directory\n");
  dir.dir("rw/real-dir");
  symlinkSync("real-dir", join(rw, "linked-dir"));
  dir.file("ro/.hidden/x.txt", "h\n");
  dir.file("ro/secret.pem", "k\n");
  dir.file("ro/a.txt", "a\n");
  const config = writeConfig(dir.path, {
    workdirs: [
      { slot: 1, alias: "rw", path: rw, read_only: false },
      { slot: 2, alias: "ro", path: join(dir.path, "ro") },
    ],
  });
  mcp = await startInProcess(config);
});
afterAll(async () => {
  await mcp.close();
  dir.remove();
});

describe("registration and annotations", () => {
  test("without a binary workdir exactly the 11 filesystem tools are listed, in the table's order", async () => {
    const { tools } = await mcp.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(FILESYSTEM_TOOLS);
  });

  test("each mutation tool declares the four hints of the table", async () => {
    const { tools } = await mcp.client.listTools();
    const hints = Object.fromEntries(
      tools.map((t) => {
        const { readOnlyHint, destructiveHint, idempotentHint, openWorldHint } = t.annotations ?? {};
        return [t.name, [readOnlyHint, destructiveHint, idempotentHint, openWorldHint]];
      }),
    );
    expect(hints["create_text_file"]).toEqual([false, false, false, false]);
    expect(hints["edit_text_file"]).toEqual([false, true, true, false]);
    expect(hints["delete_file"]).toEqual([false, true, true, false]);
    expect(hints["create_directory"]).toEqual([false, false, true, false]);
    expect(hints["delete_directory"]).toEqual([false, true, true, false]);
  });

  test("input schemas are flat, closed and declare edit_text_file's expected_count default", async () => {
    const { tools } = await mcp.client.listTools();
    const edit = tools.find((t) => t.name === "edit_text_file")!.inputSchema as Record<string, unknown>;
    expect(edit["additionalProperties"]).toBe(false);
    expect(edit["required"]).toEqual(["workdir", "path", "expected_revision", "edits"]);
    const edits = (edit["properties"] as Record<string, Record<string, unknown>>)["edits"]!;
    const item = edits["items"] as Record<string, unknown>;
    expect(item["additionalProperties"]).toBe(false);
    expect((item["properties"] as Record<string, Record<string, unknown>>)["expected_count"]).toMatchObject({
      type: "integer",
      minimum: 1,
      default: 1,
    });
  });
});

describe("common pipeline: order of checks", () => {
  test("schema validation comes first, even for an unknown workdir", async () => {
    expect(errorCode(await mcp.call("create_text_file", { workdir: "nope", path: "a" }))).toBe("INVALID_ARGUMENT");
    expect(errorCode(await mcp.call("delete_file", { workdir: "nope", path: "a", expected_revision: 1 }))).toBe("INVALID_ARGUMENT");
  });

  test("an unknown alias, a case mismatch included, is WORKDIR_NOT_FOUND for every mutation tool", async () => {
    for (const tool of MUTATION_TOOLS) {
      expect(errorCode(await mcp.call(tool, argsFor(tool, "nope", "a.txt")))).toBe("WORKDIR_NOT_FOUND");
      expect(errorCode(await mcp.call(tool, argsFor(tool, "RW", "a.txt")))).toBe("WORKDIR_NOT_FOUND");
    }
  });

  test("a read-only workdir answers WORKDIR_READ_ONLY before path policy: hidden, denied, escaping and root paths too", async () => {
    for (const tool of MUTATION_TOOLS) {
      for (const path of ["a.txt", ".hidden/x.txt", "secret.pem", "../outside", "/etc/passwd", "", ".serverfs-tmp-0"]) {
        const { result, record } = await callAudited(mcp, tool, argsFor(tool, "ro", path));
        expect(errorCode(result)).toBe("WORKDIR_READ_ONLY");
        expect(record).toMatchObject({ tool, success: false, error_code: "WORKDIR_READ_ONLY", workdir: "ro" });
        expect(record["path"]).toBeUndefined();
      }
    }
    expect(readFileSync(join(dir.path, "ro/a.txt"), "utf8")).toBe("a\n");
  });

  test("path confinement applies after the read-only check, with its own codes", async () => {
    const cases: [string, string][] = [
      ["/abs.txt", "PATH_OUTSIDE_WORKDIR"],
      ["~/x", "PATH_OUTSIDE_WORKDIR"],
      ["../x", "PATH_OUTSIDE_WORKDIR"],
      ["a\0b", "ACCESS_DENIED"],
      [".serverfs-tmp-0123456789abcdef", "RESERVED_PATH"],
      ["sub/.serverfs-disabled", "RESERVED_PATH"],
      [".git/config", "HIDDEN_PATH_NOT_ALLOWED"],
      ["keys/server.pem", "DENIED_PATH"],
      ["id_rsa", "DENIED_PATH"],
    ];
    for (const tool of MUTATION_TOOLS) {
      for (const [path, code] of cases) expect(errorCode(await mcp.call(tool, argsFor(tool, "rw", path)))).toBe(code);
    }
  });

  test("the workdir root is ROOT_MUTATION_NOT_ALLOWED, however it is spelled", async () => {
    for (const tool of MUTATION_TOOLS) {
      for (const path of ["", ".", "./", "a/..", "a/b/../.."]) {
        const { result, record } = await callAudited(mcp, tool, argsFor(tool, "rw", path));
        expect(errorCode(result)).toBe("ROOT_MUTATION_NOT_ALLOWED");
        expect(record["path"]).toBe("");
      }
    }
  });

  test("argument-content checks come before the filesystem phase", async () => {
    const r = await mcp.call("create_text_file", { workdir: "rw", path: "missing-parent/a.txt", content: "a\0b" });
    expect(errorCode(r)).toBe("BINARY_CONTENT_NOT_ALLOWED");
  });

  test("a missing parent segment is PARENT_NOT_FOUND for creates and PATH_NOT_FOUND otherwise", async () => {
    for (const tool of MUTATION_TOOLS) {
      const want = tool.startsWith("create_") ? "PARENT_NOT_FOUND" : "PATH_NOT_FOUND";
      expect(errorCode(await mcp.call(tool, argsFor(tool, "rw", "no/such/dir/x")))).toBe(want);
    }
    expect(() => lstatSync(join(rw, "no"))).toThrow();
  });

  test("a file in the parent chain is NOT_A_DIRECTORY; a symlink in it is SYMLINK_NOT_ALLOWED and nothing is written through it", async () => {
    for (const tool of MUTATION_TOOLS) {
      expect(errorCode(await mcp.call(tool, argsFor(tool, "rw", "file-in-chain/x")))).toBe("NOT_A_DIRECTORY");
      expect(errorCode(await mcp.call(tool, argsFor(tool, "rw", "linked-dir/x")))).toBe("SYMLINK_NOT_ALLOWED");
    }
    expect(readdirSync(join(rw, "real-dir"))).toEqual([]);
  });

  test("each call writes exactly one tool_call audit record with the normalized path", async () => {
    const ok = await callAudited(mcp, "create_directory", { workdir: "rw", path: "./audited/../audited-dir" });
    expect(structured(ok.result)["path"]).toBe("audited-dir");
    expect(ok.record).toMatchObject({ tool: "create_directory", success: true, workdir: "rw", path: "audited-dir" });
    const failed = await callAudited(mcp, "create_directory", { workdir: "rw", path: "audited-dir" });
    expect(errorCode(failed.result)).toBe("PATH_ALREADY_EXISTS");
    expect(failed.record).toMatchObject({ success: false, error_code: "PATH_ALREADY_EXISTS", path: "audited-dir" });
    // records are written in call order: once a later call's record is there, a late duplicate would be too
    await callAudited(mcp, "list_workdirs");
    const records = mcp.audit().filter((r) => r["event"] === "tool_call" && r["path"] === "audited-dir");
    expect(records).toHaveLength(2);
  });
});

describe("atomic publish", () => {
  test("new files get 0666 & ~umask and new directories 0777 & ~umask", async () => {
    const umask = process.umask();
    structured(await mcp.call("create_text_file", { workdir: "rw", path: "mode-file.txt", content: "m" }));
    structured(await mcp.call("create_directory", { workdir: "rw", path: "mode-dir" }));
    expect(lstatSync(join(rw, "mode-file.txt")).mode & 0o7777).toBe(0o666 & ~umask);
    expect(lstatSync(join(rw, "mode-dir")).mode & 0o7777).toBe(0o777 & ~umask);
  });

  test("content is written byte-exact: no BOM added, no newline translation", async () => {
    const content = "α\r\nβ\n\rγ";
    structured(await mcp.call("create_text_file", { workdir: "rw", path: "exact.txt", content }));
    expect(readFileSync(join(rw, "exact.txt"))).toEqual(Buffer.from(content, "utf8"));
  });

  test("no .serverfs-tmp-* file is left behind by successes or failures", async () => {
    const stat = async (path: string) => structured<{ revision: string }>(await mcp.call("stat_file", { workdir: "rw", path })).revision;
    structured(await mcp.call("create_text_file", { workdir: "rw", path: "tmp-check.txt", content: "one\n" }));
    expect(errorCode(await mcp.call("create_text_file", { workdir: "rw", path: "tmp-check.txt", content: "two\n" }))).toBe("PATH_ALREADY_EXISTS");
    const rev = await stat("tmp-check.txt");
    structured(await mcp.call("edit_text_file", { workdir: "rw", path: "tmp-check.txt", expected_revision: rev, edits: [{ old_text: "one", new_text: "1" }] }));
    expect(
      errorCode(await mcp.call("edit_text_file", { workdir: "rw", path: "tmp-check.txt", expected_revision: rev, edits: [{ old_text: "1", new_text: "2" }] })),
    ).toBe("REVISION_CONFLICT");
    expect(allNames(rw).filter((n) => n.split("/").some((s) => s.startsWith(".serverfs-tmp-")))).toEqual([]);
    expect(readFileSync(join(rw, "tmp-check.txt"), "utf8")).toBe("1\n");
  });
});
