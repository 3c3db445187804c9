import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, readdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { holdFlock, releaseAllFlocks } from "../helpers/flock-holder.ts";
import { callAudited, errorCode, type McpSession, structured } from "../helpers/mcp-client.ts";
import { startInProcess } from "../helpers/mcp-in-process.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

let dir: TempDir;
let mcp: McpSession;
let rw: string;

const STALE = "v1:0000000000000000";

const revision = async (path: string) => structured<{ revision: string }>(await mcp.call("stat_file", { workdir: "rw", path })).revision;
const mkdir = (path: string) => mcp.call("create_directory", { workdir: "rw", path });
const rmdir = (path: string, expected_revision: string) => mcp.call("delete_directory", { workdir: "rw", path, expected_revision });

beforeAll(async () => {
  dir = tempDir();
  rw = dir.dir("rw");
  dir.file("rw/file.txt", "f\n");
  dir.dir("rw/real");
  symlinkSync("real", join(rw, "link-to-dir"));
  const config = writeConfig(dir.path, { workdirs: [{ slot: 1, alias: "rw", path: rw, read_only: false }] });
  mcp = await startInProcess(config);
});
afterAll(async () => {
  releaseAllFlocks();
  await mcp.close();
  dir.remove();
});

describe("create_directory", () => {
  test("creates exactly one directory and returns its post-commit revision", async () => {
    const { result, record } = await callAudited(mcp, "create_directory", { workdir: "rw", path: "made" });
    const r = structured(result);
    expect(Object.keys(r).sort()).toEqual(["created", "path", "revision", "workdir"]);
    expect(r).toMatchObject({ workdir: "rw", path: "made", created: true });
    expect(r["revision"]).toBe(await revision("made"));
    expect(record).toMatchObject({ path: "made", revision: r["revision"] });
    expect(lstatSync(join(rw, "made")).isDirectory()).toBe(true);
  });

  test("parents are never created: a missing parent is PARENT_NOT_FOUND", async () => {
    expect(errorCode(await mkdir("p/q/r"))).toBe("PARENT_NOT_FOUND");
    expect(existsSync(join(rw, "p"))).toBe(false);
    structured(await mkdir("made/child"));
  });

  test("anything already at the target is PATH_ALREADY_EXISTS", async () => {
    symlinkSync("nowhere", join(rw, "dangling"));
    for (const path of ["file.txt", "real", "link-to-dir", "dangling"]) expect(errorCode(await mkdir(path))).toBe("PATH_ALREADY_EXISTS");
    expect(existsSync(join(rw, "nowhere"))).toBe(false);
  });
});

describe("delete_directory", () => {
  test("removes an empty directory with its current revision", async () => {
    const made = structured<{ revision: string }>(await mkdir("to-remove"));
    const { result, record } = await callAudited(mcp, "delete_directory", { workdir: "rw", path: "to-remove", expected_revision: made.revision });
    expect(structured(result)).toEqual({ workdir: "rw", path: "to-remove", deleted: true, revision_deleted: made.revision });
    expect(record).toMatchObject({ revision: made.revision });
    expect(existsSync(join(rw, "to-remove"))).toBe(false);
  });

  test("emptiness is physical: a hidden, denied or reserved entry makes it DIRECTORY_NOT_EMPTY, and no entry is named", async () => {
    for (const [i, name] of [".keep", "server.pem", ".serverfs-tmp-notours", "visible.txt"].entries()) {
      dir.file(`rw/full-${i}/${name}`, "x");
      const r = await rmdir(`full-${i}`, await revision(`full-${i}`));
      expect(errorCode(r)).toBe("DIRECTORY_NOT_EMPTY");
      expect((r.content[0] as { text: string }).text).not.toContain(name);
      expect(readdirSync(join(rw, `full-${i}`))).toEqual([name]);
    }
  });

  test("a temp file whose writer holds its lock counts, with an honest message; once the lock is free it is removed first", async () => {
    const temp = dir.file("rw/writing/.serverfs-tmp-0123456789abcdef", "in flight");
    const holder = await holdFlock(temp);
    try {
      const r = await rmdir("writing", await revision("writing"));
      expect(errorCode(r)).toBe("DIRECTORY_NOT_EMPTY");
      expect((r.content[0] as { text: string }).text).toBe(
        "DIRECTORY_NOT_EMPTY: rw:writing is not empty: another ServerFS process is still writing a file in it",
      );
      expect(existsSync(temp)).toBe(true);
    } finally {
      await holder.release();
    }
    structured(await rmdir("writing", await revision("writing")));
    expect(existsSync(join(rw, "writing"))).toBe(false);
  });

  test("missing, symlink and non-directory targets: PATH_NOT_FOUND, SYMLINK_NOT_ALLOWED, NOT_A_DIRECTORY", async () => {
    expect(errorCode(await rmdir("absent", STALE))).toBe("PATH_NOT_FOUND");
    expect(errorCode(await rmdir("link-to-dir", await revision("link-to-dir")))).toBe("SYMLINK_NOT_ALLOWED");
    expect(errorCode(await rmdir("file.txt", await revision("file.txt")))).toBe("NOT_A_DIRECTORY");
    expect(lstatSync(join(rw, "link-to-dir")).isSymbolicLink()).toBe(true);
    expect(lstatSync(join(rw, "real")).isDirectory()).toBe(true);
  });

  test("a stale revision is REVISION_CONFLICT, checked before emptiness", async () => {
    structured(await mkdir("revdir"));
    const rev = await revision("revdir");
    dir.file("rw/revdir/x", "x");
    expect(errorCode(await rmdir("revdir", rev))).toBe("REVISION_CONFLICT");
    expect(errorCode(await rmdir("revdir", STALE))).toBe("REVISION_CONFLICT");
    expect(existsSync(join(rw, "revdir/x"))).toBe(true);
  });
});
