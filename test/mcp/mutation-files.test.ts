import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, closeSync, existsSync, linkSync, lstatSync, openSync, readFileSync, readlinkSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { getXattr, setXattr } from "../../src/shared/ffi/xattr.ts";
import { callAudited, errorCode, type McpSession, structured } from "../helpers/mcp-client.ts";
import { startInProcess } from "../helpers/mcp-in-process.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

let dir: TempDir;
let mcp: McpSession;
let rw: string;

const STALE = "v1:0000000000000000";

const revision = async (path: string, workdir = "rw") => structured<{ revision: string }>(await mcp.call("stat_file", { workdir, path })).revision;

const edit = (path: string, expected_revision: string, edits: Record<string, unknown>[], workdir = "rw") =>
  mcp.call("edit_text_file", { workdir, path, expected_revision, edits });

const bytesOf = (path: string) => readFileSync(join(rw, path));

function mkfifo(path: string): void {
  expect(Bun.spawnSync(["mkfifo", path]).exitCode).toBe(0);
}

beforeAll(async () => {
  dir = tempDir();
  rw = dir.dir("rw");
  dir.dir("small");
  dir.dir("rw/a-dir");
  mkfifo(join(rw, "fifo"));
  symlinkSync("target.txt", join(rw, "link.txt"));
  dir.file("rw/target.txt", "target\n");
  const config = writeConfig(dir.path, {
    limits: { max_edits_per_call: 3 },
    workdirs: [
      { slot: 1, alias: "rw", path: rw, read_only: false },
      { slot: 2, alias: "small", path: join(dir.path, "small"), read_only: false, max_write_bytes: 16 },
    ],
  });
  mcp = await startInProcess(config);
});
afterAll(async () => {
  await mcp.close();
  dir.remove();
});

describe("create_text_file", () => {
  test("creates the file and returns exactly the contract's fields, with the normalized path", async () => {
    const r = structured(await mcp.call("create_text_file", { workdir: "rw", path: "./new/../created.txt", content: "héllo\n" }));
    expect(Object.keys(r).sort()).toEqual(["bytes_written", "created", "path", "revision", "workdir"]);
    expect(r).toMatchObject({ workdir: "rw", path: "created.txt", created: true, bytes_written: 7 });
    expect(bytesOf("created.txt").toString("utf8")).toBe("héllo\n");
  });

  test("the returned revision is taken after the commit: it equals stat_file's and an edit with it never conflicts", async () => {
    const r = structured<{ revision: string }>(await mcp.call("create_text_file", { workdir: "rw", path: "then-edit.txt", content: "one\n" }));
    expect(r.revision).toMatch(/^v1:[0-9a-f]{16}$/);
    expect(await revision("then-edit.txt")).toBe(r.revision);
    const e = structured(await edit("then-edit.txt", r.revision, [{ old_text: "one", new_text: "two" }]));
    expect(e["revision_before"]).toBe(r.revision);
    expect(bytesOf("then-edit.txt").toString()).toBe("two\n");
  });

  test("an empty content creates an empty file", async () => {
    expect(structured(await mcp.call("create_text_file", { workdir: "rw", path: "empty.txt", content: "" }))["bytes_written"]).toBe(0);
    expect(bytesOf("empty.txt").length).toBe(0);
  });

  test("create never overwrites: a file, a directory, a symlink (even dangling) or a FIFO is PATH_ALREADY_EXISTS", async () => {
    symlinkSync("nowhere", join(rw, "dangling"));
    for (const path of ["target.txt", "a-dir", "link.txt", "dangling", "fifo"]) {
      expect(errorCode(await mcp.call("create_text_file", { workdir: "rw", path, content: "new" }))).toBe("PATH_ALREADY_EXISTS");
    }
    expect(bytesOf("target.txt").toString()).toBe("target\n");
    expect(readlinkSync(join(rw, "dangling"))).toBe("nowhere");
    expect(existsSync(join(rw, "nowhere"))).toBe(false);
    expect(lstatSync(join(rw, "fifo")).isFIFO()).toBe(true);
  });

  test("a missing parent is PARENT_NOT_FOUND and no parent is created", async () => {
    expect(errorCode(await mcp.call("create_text_file", { workdir: "rw", path: "nope/x.txt", content: "x" }))).toBe("PARENT_NOT_FOUND");
    expect(existsSync(join(rw, "nope"))).toBe(false);
  });

  test("NUL in content is BINARY_CONTENT_NOT_ALLOWED; more than max_write_bytes is WRITE_TOO_LARGE; NUL is checked first", async () => {
    expect(errorCode(await mcp.call("create_text_file", { workdir: "small", path: "n.txt", content: "a\0b" }))).toBe("BINARY_CONTENT_NOT_ALLOWED");
    expect(errorCode(await mcp.call("create_text_file", { workdir: "small", path: "big.txt", content: "x".repeat(17) }))).toBe("WRITE_TOO_LARGE");
    expect(errorCode(await mcp.call("create_text_file", { workdir: "small", path: "big.txt", content: "é".repeat(9) }))).toBe("WRITE_TOO_LARGE");
    expect(errorCode(await mcp.call("create_text_file", { workdir: "small", path: "both.txt", content: `${"x".repeat(20)}\0` }))).toBe(
      "BINARY_CONTENT_NOT_ALLOWED",
    );
    expect(structured(await mcp.call("create_text_file", { workdir: "small", path: "max.txt", content: "x".repeat(16) }))["bytes_written"]).toBe(16);
    expect(existsSync(join(dir.path, "small/big.txt"))).toBe(false);
  });

  test("the audit record carries bytes_written and revision, never the content", async () => {
    const { result, record } = await callAudited(mcp, "create_text_file", { workdir: "rw", path: "audited.txt", content: "SECRET-CONTENT-42" });
    const r = structured(result);
    expect(record).toMatchObject({ tool: "create_text_file", success: true, path: "audited.txt", bytes_written: 17, revision: r["revision"] });
    expect(mcp.stderr()).not.toContain("SECRET-CONTENT-42");
  });
});

describe("edit_text_file", () => {
  test("a literal replace-all with expected_count defaulting to 1, returning the contract's fields", async () => {
    dir.file("rw/e1.txt", "alpha beta\n");
    const rev = await revision("e1.txt");
    const r = structured(await edit("e1.txt", rev, [{ old_text: "beta", new_text: "gamma" }]));
    expect(Object.keys(r).sort()).toEqual(["bytes_after", "bytes_before", "edited", "edits_applied", "path", "revision", "revision_before", "workdir"].sort());
    expect(r).toMatchObject({ workdir: "rw", path: "e1.txt", edited: true, edits_applied: 1, bytes_before: 11, bytes_after: 12, revision_before: rev });
    expect(r["revision"]).toBe(await revision("e1.txt"));
    expect(bytesOf("e1.txt").toString()).toBe("alpha gamma\n");
  });

  test("every occurrence is replaced and the count must equal expected_count, else EDIT_CONFLICT and nothing changes", async () => {
    dir.file("rw/e2.txt", "x.x.x\n");
    const rev = await revision("e2.txt");
    expect(errorCode(await edit("e2.txt", rev, [{ old_text: "x", new_text: "y" }]))).toBe("EDIT_CONFLICT");
    expect(errorCode(await edit("e2.txt", rev, [{ old_text: "x", new_text: "y", expected_count: 2 }]))).toBe("EDIT_CONFLICT");
    expect(errorCode(await edit("e2.txt", rev, [{ old_text: "absent", new_text: "y" }]))).toBe("EDIT_CONFLICT");
    expect(await revision("e2.txt")).toBe(rev);
    structured(await edit("e2.txt", rev, [{ old_text: "x", new_text: "yy", expected_count: 3 }]));
    expect(bytesOf("e2.txt").toString()).toBe("yy.yy.yy\n");
  });

  test("occurrences are non-overlapping, scanned left to right", async () => {
    dir.file("rw/e3.txt", "aaaaa");
    const r = structured(await edit("e3.txt", await revision("e3.txt"), [{ old_text: "aa", new_text: "b", expected_count: 2 }]));
    expect(r["bytes_after"]).toBe(3);
    expect(bytesOf("e3.txt").toString()).toBe("bba");
  });

  test("edits apply in order, each to the text the previous one left", async () => {
    dir.file("rw/e4.txt", "one\n");
    const r = structured(
      await edit("e4.txt", await revision("e4.txt"), [
        { old_text: "one", new_text: "two" },
        { old_text: "two", new_text: "three" },
      ]),
    );
    expect(r["edits_applied"]).toBe(2);
    expect(bytesOf("e4.txt").toString()).toBe("three\n");
  });

  test("all or nothing: a later failing edit leaves the file and its revision untouched", async () => {
    dir.file("rw/e5.txt", "keep me\n");
    const rev = await revision("e5.txt");
    const r = await edit("e5.txt", rev, [
      { old_text: "keep", new_text: "lose" },
      { old_text: "missing", new_text: "x" },
    ]);
    expect(errorCode(r)).toBe("EDIT_CONFLICT");
    expect(bytesOf("e5.txt").toString()).toBe("keep me\n");
    expect(await revision("e5.txt")).toBe(rev);
  });

  test("an empty old_text is allowed only on an empty text, where it counts once", async () => {
    dir.file("rw/e6.txt", "");
    const rev = await revision("e6.txt");
    expect(errorCode(await edit("e6.txt", rev, [{ old_text: "", new_text: "x", expected_count: 2 }]))).toBe("EDIT_CONFLICT");
    structured(await edit("e6.txt", rev, [{ old_text: "", new_text: "filled\n" }]));
    expect(bytesOf("e6.txt").toString()).toBe("filled\n");
    expect(errorCode(await edit("e6.txt", await revision("e6.txt"), [{ old_text: "", new_text: "x" }]))).toBe("EDIT_CONFLICT");
  });

  test("the BOM is hidden from matching and preserved; sizes include it", async () => {
    const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
    dir.file("rw/bom.txt", Buffer.concat([BOM, Buffer.from("hello\n")]));
    const rev = await revision("bom.txt");
    expect(errorCode(await edit("bom.txt", rev, [{ old_text: "\uFEFFhello", new_text: "x" }]))).toBe("EDIT_CONFLICT");
    const r = structured(await edit("bom.txt", rev, [{ old_text: "hello", new_text: "bye" }]));
    expect(r).toMatchObject({ bytes_before: 9, bytes_after: 7 });
    expect(bytesOf("bom.txt")).toEqual(Buffer.concat([BOM, Buffer.from("bye\n")]));
    dir.file("rw/bom-only.txt", BOM);
    structured(await edit("bom-only.txt", await revision("bom-only.txt"), [{ old_text: "", new_text: "text" }]));
    expect(bytesOf("bom-only.txt")).toEqual(Buffer.concat([BOM, Buffer.from("text")]));
  });

  test("CRLF is matched literally and preserved", async () => {
    dir.file("rw/crlf.txt", "a\r\nb\r\n");
    const rev = await revision("crlf.txt");
    expect(errorCode(await edit("crlf.txt", rev, [{ old_text: "a\nb", new_text: "x" }]))).toBe("EDIT_CONFLICT");
    structured(await edit("crlf.txt", rev, [{ old_text: "a\r\nb", new_text: "c\r\nd" }]));
    expect(bytesOf("crlf.txt").toString()).toBe("c\r\nd\r\n");
  });

  test("an edit never splits a character: a lone surrogate does not match half of a pair", async () => {
    dir.file("rw/emoji.txt", "😀\n");
    expect(errorCode(await edit("emoji.txt", await revision("emoji.txt"), [{ old_text: "\uD83D", new_text: "x" }]))).toBe("EDIT_CONFLICT");
    expect(bytesOf("emoji.txt").toString()).toBe("😀\n");
  });

  test("a stale or malformed revision is REVISION_CONFLICT and the file is unchanged", async () => {
    dir.file("rw/rev.txt", "v1\n");
    const rev = await revision("rev.txt");
    structured(await edit("rev.txt", rev, [{ old_text: "v1", new_text: "v2" }]));
    for (const stale of [rev, STALE, "garbage", ""]) {
      expect(errorCode(await edit("rev.txt", stale, [{ old_text: "v2", new_text: "v3" }]))).toBe("REVISION_CONFLICT");
    }
    expect(bytesOf("rev.txt").toString()).toBe("v2\n");
  });

  test("permission bits and extended attributes are preserved by the replace", async () => {
    const p = dir.file("rw/meta.txt", "meta\n");
    chmodSync(p, 0o640);
    const fd = openSync(p, "r");
    try {
      expect(setXattr(fd, "user.serverfs-test", Buffer.from("kept"))).toBe(true);
    } finally {
      closeSync(fd);
    }
    const before = lstatSync(p);
    structured(await edit("meta.txt", await revision("meta.txt"), [{ old_text: "meta", new_text: "data" }]));
    const after = lstatSync(p);
    expect(after.ino).not.toBe(before.ino);
    expect(after.mode & 0o7777).toBe(0o640);
    expect([after.uid, after.gid]).toEqual([before.uid, before.gid]);
    const fd2 = openSync(p, "r");
    try {
      expect(Buffer.from(getXattr(fd2, "user.serverfs-test") ?? []).toString()).toBe("kept");
    } finally {
      closeSync(fd2);
    }
  });

  test("a target with more than one hard link is MULTIPLE_HARDLINKS_NOT_SUPPORTED and both names are unchanged", async () => {
    dir.file("rw/linked.txt", "shared\n");
    linkSync(join(rw, "linked.txt"), join(rw, "linked-2.txt"));
    expect(errorCode(await edit("linked.txt", await revision("linked.txt"), [{ old_text: "shared", new_text: "x" }]))).toBe("MULTIPLE_HARDLINKS_NOT_SUPPORTED");
    expect(bytesOf("linked.txt").toString()).toBe("shared\n");
    expect(lstatSync(join(rw, "linked.txt")).ino).toBe(lstatSync(join(rw, "linked-2.txt")).ino);
  });

  test("missing, symlink, directory and special targets: PATH_NOT_FOUND, SYMLINK_NOT_ALLOWED, NOT_A_FILE, UNSUPPORTED_FILE_TYPE", async () => {
    const one = [{ old_text: "a", new_text: "b" }];
    expect(errorCode(await edit("absent.txt", STALE, one))).toBe("PATH_NOT_FOUND");
    expect(existsSync(join(rw, "absent.txt"))).toBe(false);
    expect(errorCode(await edit("link.txt", await revision("link.txt"), one))).toBe("SYMLINK_NOT_ALLOWED");
    expect(errorCode(await edit("a-dir", await revision("a-dir"), one))).toBe("NOT_A_FILE");
    expect(errorCode(await edit("fifo", await revision("fifo"), one))).toBe("UNSUPPORTED_FILE_TYPE");
    expect(bytesOf("target.txt").toString()).toBe("target\n");
  });

  test("filesystem-phase checks run in the contract's order", async () => {
    const one = [{ old_text: "a", new_text: "b" }];
    // type before revision
    expect(errorCode(await edit("a-dir", STALE, one))).toBe("NOT_A_FILE");
    expect(errorCode(await edit("fifo", STALE, one))).toBe("UNSUPPORTED_FILE_TYPE");
    // revision before hard links
    expect(errorCode(await edit("linked.txt", STALE, one))).toBe("REVISION_CONFLICT");
    // size before content
    dir.file("small/large-binary.txt", Buffer.from(`${"a".repeat(20)}\0`));
    expect(errorCode(await edit("large-binary.txt", STALE, one, "small"))).toBe("REVISION_CONFLICT");
    expect(errorCode(await edit("large-binary.txt", await revision("large-binary.txt", "small"), one, "small"))).toBe("WRITE_TOO_LARGE");
    // NUL before encoding
    dir.file("rw/nul-and-latin1.txt", Buffer.from([0x61, 0x00, 0xe9]));
    expect(errorCode(await edit("nul-and-latin1.txt", await revision("nul-and-latin1.txt"), one))).toBe("BINARY_FILE");
    dir.file("rw/latin1.txt", Buffer.from([0x61, 0xe9, 0x0a]));
    expect(errorCode(await edit("latin1.txt", await revision("latin1.txt"), one))).toBe("UNSUPPORTED_TEXT_ENCODING");
  });

  test("argument checks, before the filesystem: TOO_MANY_EDITS, then WRITE_TOO_LARGE, then BINARY_CONTENT_NOT_ALLOWED", async () => {
    const four = Array.from({ length: 4 }, () => ({ old_text: "a", new_text: "b\0" }));
    expect(errorCode(await edit("absent.txt", STALE, four, "small"))).toBe("TOO_MANY_EDITS");
    const big = [{ old_text: "x".repeat(10), new_text: "\0".repeat(7) }];
    expect(errorCode(await edit("absent.txt", STALE, big, "small"))).toBe("WRITE_TOO_LARGE");
    expect(errorCode(await edit("absent.txt", STALE, [{ old_text: "a", new_text: "\0" }], "small"))).toBe("BINARY_CONTENT_NOT_ALLOWED");
    expect(errorCode(await edit("absent.txt", STALE, [{ old_text: "a\0", new_text: "b" }], "small"))).toBe("PATH_NOT_FOUND");
  });

  test("a result over max_write_bytes is WRITE_TOO_LARGE and the file is untouched", async () => {
    dir.file("small/grow.txt", "aaaaa");
    const rev = await revision("grow.txt", "small");
    expect(errorCode(await edit("grow.txt", rev, [{ old_text: "a", new_text: "xxxx", expected_count: 5 }], "small"))).toBe("WRITE_TOO_LARGE");
    expect(readFileSync(join(dir.path, "small/grow.txt"), "utf8")).toBe("aaaaa");
    expect(structured(await edit("grow.txt", rev, [{ old_text: "a", new_text: "xxx", expected_count: 5 }], "small"))["bytes_after"]).toBe(15);
  });

  test("the schema refuses an empty edits array, expected_count below 1 and unknown keys in an edit", async () => {
    expect(errorCode(await edit("e1.txt", STALE, []))).toBe("INVALID_ARGUMENT");
    expect(errorCode(await edit("e1.txt", STALE, [{ old_text: "a", new_text: "b", expected_count: 0 }]))).toBe("INVALID_ARGUMENT");
    expect(errorCode(await edit("e1.txt", STALE, [{ old_text: "a", new_text: "b", extra: 1 }]))).toBe("INVALID_ARGUMENT");
    expect(errorCode(await edit("e1.txt", STALE, [{ old_text: "a" }]))).toBe("INVALID_ARGUMENT");
  });

  test("the audit record carries edit_count, bytes_before, bytes_after and revision, never the texts", async () => {
    dir.file("rw/audit-edit.txt", "OLD-TEXT-77\n");
    const args = { workdir: "rw", path: "audit-edit.txt", expected_revision: await revision("audit-edit.txt") };
    const { result, record } = await callAudited(mcp, "edit_text_file", { ...args, edits: [{ old_text: "OLD-TEXT-77", new_text: "NEW-TEXT-88" }] });
    expect(record).toMatchObject({ edit_count: 1, bytes_before: 12, bytes_after: 12, revision: structured(result)["revision"] });
    expect(mcp.stderr()).not.toContain("OLD-TEXT-77");
    expect(mcp.stderr()).not.toContain("NEW-TEXT-88");
  });
});

describe("delete_file", () => {
  test("deletes a regular file with its current revision and returns the contract's fields", async () => {
    dir.file("rw/doomed.txt", "bye\n");
    const rev = await revision("doomed.txt");
    const { result, record } = await callAudited(mcp, "delete_file", { workdir: "rw", path: "doomed.txt", expected_revision: rev });
    expect(structured(result)).toEqual({ workdir: "rw", path: "doomed.txt", deleted: true, bytes_deleted: 4, revision_deleted: rev });
    expect(record).toMatchObject({ bytes_deleted: 4, revision: rev });
    expect(existsSync(join(rw, "doomed.txt"))).toBe(false);
  });

  test("a binary file can be deleted", async () => {
    dir.file("rw/blob.bin", Buffer.from([0, 1, 2, 0]));
    structured(await mcp.call("delete_file", { workdir: "rw", path: "blob.bin", expected_revision: await revision("blob.bin") }));
    expect(existsSync(join(rw, "blob.bin"))).toBe(false);
  });

  test("a stale revision is REVISION_CONFLICT and the file remains", async () => {
    dir.file("rw/kept.txt", "kept\n");
    const rev = await revision("kept.txt");
    dir.file("rw/kept.txt", "changed\n");
    expect(errorCode(await mcp.call("delete_file", { workdir: "rw", path: "kept.txt", expected_revision: rev }))).toBe("REVISION_CONFLICT");
    expect(bytesOf("kept.txt").toString()).toBe("changed\n");
  });

  test("a symlink is never removed nor followed; directories and special files are refused", async () => {
    const del = async (path: string) => errorCode(await mcp.call("delete_file", { workdir: "rw", path, expected_revision: await revision(path) }));
    expect(await del("link.txt")).toBe("SYMLINK_NOT_ALLOWED");
    expect(await del("a-dir")).toBe("NOT_A_FILE");
    expect(await del("fifo")).toBe("UNSUPPORTED_FILE_TYPE");
    expect(errorCode(await mcp.call("delete_file", { workdir: "rw", path: "gone.txt", expected_revision: STALE }))).toBe("PATH_NOT_FOUND");
    expect(lstatSync(join(rw, "link.txt")).isSymbolicLink()).toBe(true);
    expect(bytesOf("target.txt").toString()).toBe("target\n");
    expect(lstatSync(join(rw, "a-dir")).isDirectory()).toBe(true);
    expect(lstatSync(join(rw, "fifo")).isFIFO()).toBe(true);
  });
});
