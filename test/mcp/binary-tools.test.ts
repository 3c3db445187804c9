import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, existsSync, linkSync, lstatSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { callAudited, errorCode, type McpSession, structured } from "../helpers/mcp-client.ts";
import { startInProcess } from "../helpers/mcp-in-process.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

let dir: TempDir;
let mcp: McpSession;
let bin: string;

const STALE = "v1:0000000000000000";
const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

const revision = async (path: string, workdir = "bin") => structured<{ revision: string }>(await mcp.call("stat_file", { workdir, path })).revision;
const download = (path: string, workdir = "bin") => mcp.call("download_binary_file", { workdir, path });
const upload = (path: string, data_base64: string, extra: Record<string, unknown> = {}, workdir = "bin") =>
  mcp.call("upload_binary_file", { workdir, path, data_base64, ...extra });

beforeAll(async () => {
  dir = tempDir();
  bin = dir.dir("bin");
  dir.dir("bin/a-dir");
  dir.file("bin/target.bin", Buffer.from([1, 2, 3]));
  symlinkSync("target.bin", join(bin, "link.bin"));
  expect(Bun.spawnSync(["mkfifo", join(bin, "fifo")]).exitCode).toBe(0);
  dir.file("ro-bin/data.bin", Buffer.from([9, 8, 7]));
  dir.file("nobin/data.bin", Buffer.from([1]));
  dir.dir("small");
  dir.dir("ro");
  const config = writeConfig(dir.path, {
    workdirs: [
      { slot: 1, alias: "bin", path: bin, read_only: false, binary_transfer_enabled: true },
      { slot: 2, alias: "ro-bin", path: join(dir.path, "ro-bin"), binary_transfer_enabled: true },
      { slot: 3, alias: "nobin", path: join(dir.path, "nobin"), read_only: false },
      { slot: 4, alias: "small", path: join(dir.path, "small"), read_only: false, binary_transfer_enabled: true, max_binary_transfer_bytes: 10 },
      { slot: 5, alias: "ro", path: join(dir.path, "ro") },
      // procfs files stat with size 0 yet read back bytes: a size change the download must notice
      { slot: 6, alias: "procfs", path: "/proc/sys/kernel", binary_transfer_enabled: true },
    ],
  });
  mcp = await startInProcess(config);
});
afterAll(async () => {
  await mcp.close();
  dir.remove();
});

describe("registration and annotations", () => {
  test("one binary workdir registers the two binary tools after the 11 filesystem tools", async () => {
    const { tools } = await mcp.client.listTools();
    expect(tools).toHaveLength(13);
    expect(tools.slice(11).map((t) => t.name)).toEqual(["download_binary_file", "upload_binary_file"]);
    const hints = (name: string) => {
      const a = tools.find((t) => t.name === name)?.annotations ?? {};
      return [a.readOnlyHint, a.destructiveHint, a.idempotentHint, a.openWorldHint];
    };
    expect(hints("download_binary_file")).toEqual([true, false, true, false]);
    expect(hints("upload_binary_file")).toEqual([false, true, false, false]);
  });
});

describe("download_binary_file", () => {
  test("returns the bytes as an embedded resource whose SHA-256 matches, after the JSON text block", async () => {
    const bytes = randomBytes(4096);
    dir.file("bin/photo.png", bytes);
    const r = await download("photo.png");
    const s = structured(r);
    expect(s).toEqual({
      workdir: "bin",
      path: "photo.png",
      size: 4096,
      mime_type: "image/png",
      sha256: sha256(bytes),
      revision: await revision("photo.png"),
    });
    expect(r.content).toHaveLength(2);
    expect(r.content[0]).toEqual({ type: "text", text: JSON.stringify(s) });
    const block = r.content[1] as { type: string; resource: { uri: string; mimeType: string; blob: string } };
    expect(block.type).toBe("resource");
    expect(block.resource.uri).toBe("serverfs://bin/photo.png");
    expect(block.resource.mimeType).toBe("image/png");
    const decoded = Buffer.from(block.resource.blob, "base64");
    expect(decoded.toString("base64")).toBe(block.resource.blob);
    expect(sha256(decoded)).toBe(sha256(bytes));
  });

  test("the resource URI percent-encodes each path segment", async () => {
    dir.file("bin/dir with space/ü#?.bin", Buffer.from([0]));
    const r = await download("dir with space/ü#?.bin");
    expect((r.content[1] as { resource: { uri: string } }).resource.uri).toBe("serverfs://bin/dir%20with%20space/%C3%BC%23%3F.bin");
  });

  test("an empty file downloads as zero bytes", async () => {
    dir.file("bin/empty.bin", "");
    const r = await download("empty.bin");
    expect(structured(r)).toMatchObject({ size: 0, sha256: sha256(new Uint8Array(0)), mime_type: "application/octet-stream" });
    expect((r.content[1] as { resource: { blob: string } }).resource.blob).toBe("");
  });

  test("works in a read-only workdir", async () => {
    expect(structured(await download("data.bin", "ro-bin"))["sha256"]).toBe(sha256(Buffer.from([9, 8, 7])));
  });

  test("BINARY_TRANSFER_DISABLED comes after WORKDIR_NOT_FOUND and before path confinement", async () => {
    expect(errorCode(await download("data.bin", "nope"))).toBe("WORKDIR_NOT_FOUND");
    expect(errorCode(await download("data.bin", "nobin"))).toBe("BINARY_TRANSFER_DISABLED");
    expect(errorCode(await download("../escape", "nobin"))).toBe("BINARY_TRANSFER_DISABLED");
    expect(errorCode(await download(".env", "nobin"))).toBe("BINARY_TRANSFER_DISABLED");
    expect(errorCode(await download("../escape"))).toBe("PATH_OUTSIDE_WORKDIR");
    expect(errorCode(await download(".hidden"))).toBe("HIDDEN_PATH_NOT_ALLOWED");
  });

  test("target checks: root and directories are NOT_A_FILE, symlinks SYMLINK_NOT_ALLOWED, FIFOs UNSUPPORTED_FILE_TYPE", async () => {
    expect(errorCode(await download(""))).toBe("NOT_A_FILE");
    expect(errorCode(await download("a-dir"))).toBe("NOT_A_FILE");
    expect(errorCode(await download("link.bin"))).toBe("SYMLINK_NOT_ALLOWED");
    expect(errorCode(await download("fifo"))).toBe("UNSUPPORTED_FILE_TYPE");
    expect(errorCode(await download("absent.bin"))).toBe("PATH_NOT_FOUND");
  });

  test("a file over max_binary_transfer_bytes is BINARY_FILE_TOO_LARGE; exactly the limit downloads", async () => {
    dir.file("small/eleven.bin", Buffer.alloc(11));
    dir.file("small/ten.bin", Buffer.alloc(10));
    expect(errorCode(await download("eleven.bin", "small"))).toBe("BINARY_FILE_TOO_LARGE");
    expect(structured(await download("ten.bin", "small"))["size"]).toBe(10);
  });

  test("a file whose size differs from the stat-ed size while it is read is FILE_CHANGED_DURING_READ", async () => {
    expect(errorCode(await download("ostype", "procfs"))).toBe("FILE_CHANGED_DURING_READ");
  });

  test("the audit record carries bytes_returned, mime_type and revision, never the payload", async () => {
    const bytes = Buffer.from("PAYLOAD-MARKER-0123456789");
    dir.file("bin/marker.txt", bytes);
    const { result, record } = await callAudited(mcp, "download_binary_file", { workdir: "bin", path: "marker.txt" });
    expect(record).toMatchObject({ bytes_returned: bytes.length, mime_type: "text/plain", revision: structured(result)["revision"] });
    expect(mcp.stderr()).not.toContain(bytes.toString("base64"));
    expect(mcp.stderr()).not.toContain("PAYLOAD-MARKER");
  });
});

describe("upload_binary_file", () => {
  test("creates a new file and returns the contract's fields; a download round-trips the bytes", async () => {
    const bytes = randomBytes(1000);
    const { result, record } = await callAudited(mcp, "upload_binary_file", { workdir: "bin", path: "up.bin", data_base64: bytes.toString("base64") });
    const r = structured(result);
    expect(r).toEqual({
      workdir: "bin",
      path: "up.bin",
      created: true,
      replaced: false,
      bytes_written: 1000,
      sha256: sha256(bytes),
      revision_before: null,
      revision: await revision("up.bin"),
    });
    expect(record).toMatchObject({ bytes_written: 1000, revision: r["revision"] });
    expect(mcp.stderr()).not.toContain(bytes.toString("base64").slice(0, 64));
    expect(readFileSync(join(bin, "up.bin"))).toEqual(bytes);
    expect(structured(await download("up.bin"))["sha256"]).toBe(sha256(bytes));
    expect(lstatSync(join(bin, "up.bin")).mode & 0o777).toBe(0o666 & ~process.umask());
  });

  test('"" is a valid zero-byte payload, and a null expected_revision is the same as absent', async () => {
    expect(structured(await upload("zero.bin", "", { expected_revision: null }))).toMatchObject({ bytes_written: 0, created: true });
    expect(readFileSync(join(bin, "zero.bin")).length).toBe(0);
  });

  test("create-only by default: an existing object is PATH_ALREADY_EXISTS, a missing parent PARENT_NOT_FOUND", async () => {
    for (const path of ["target.bin", "link.bin", "fifo", "a-dir"]) expect(errorCode(await upload(path, "AAAA"))).toBe("PATH_ALREADY_EXISTS");
    expect(errorCode(await upload("no/parent.bin", "AAAA"))).toBe("PARENT_NOT_FOUND");
    expect(readFileSync(join(bin, "target.bin"))).toEqual(Buffer.from([1, 2, 3]));
  });

  test("overwrite replaces exactly one existing regular file in the state the client saw, keeping its mode", async () => {
    const p = dir.file("bin/replace.bin", Buffer.from([1]));
    chmodSync(p, 0o640);
    const before = await revision("replace.bin");
    const r = structured(await upload("replace.bin", "AgMEBQ==", { overwrite: true, expected_revision: before }));
    expect(r).toMatchObject({ created: false, replaced: true, bytes_written: 4, revision_before: before, revision: await revision("replace.bin") });
    expect(readFileSync(p)).toEqual(Buffer.from([2, 3, 4, 5]));
    expect(lstatSync(p).mode & 0o7777).toBe(0o640);
    expect(errorCode(await upload("replace.bin", "AAAA", { overwrite: true, expected_revision: before }))).toBe("REVISION_CONFLICT");
    expect(readFileSync(p)).toEqual(Buffer.from([2, 3, 4, 5]));
  });

  test("overwrite refuses missing, symlink, directory, special and hard-linked targets with their codes", async () => {
    const over = async (path: string, rev?: string) =>
      errorCode(await upload(path, "AAAA", { overwrite: true, expected_revision: rev ?? (await revision(path)) }));
    expect(await over("absent.bin", STALE)).toBe("PATH_NOT_FOUND");
    expect(existsSync(join(bin, "absent.bin"))).toBe(false);
    expect(await over("link.bin")).toBe("SYMLINK_NOT_ALLOWED");
    expect(await over("a-dir")).toBe("NOT_A_FILE");
    expect(await over("fifo")).toBe("UNSUPPORTED_FILE_TYPE");
    dir.file("bin/hard.bin", Buffer.from([7]));
    linkSync(join(bin, "hard.bin"), join(bin, "hard-2.bin"));
    expect(await over("hard.bin", STALE)).toBe("REVISION_CONFLICT");
    expect(await over("hard.bin")).toBe("MULTIPLE_HARDLINKS_NOT_SUPPORTED");
    expect(readFileSync(join(bin, "target.bin"))).toEqual(Buffer.from([1, 2, 3]));
    expect(readFileSync(join(bin, "hard.bin"))).toEqual(Buffer.from([7]));
  });

  test("pipeline order: WORKDIR_READ_ONLY, then BINARY_TRANSFER_DISABLED, then the path, then the root", async () => {
    expect(errorCode(await upload("x.bin", "!", {}, "ro"))).toBe("WORKDIR_READ_ONLY");
    expect(errorCode(await upload("x.bin", "!", {}, "ro-bin"))).toBe("WORKDIR_READ_ONLY");
    expect(errorCode(await upload(".env", "!", {}, "nobin"))).toBe("BINARY_TRANSFER_DISABLED");
    expect(errorCode(await upload("../x.bin", "!", { overwrite: true }))).toBe("PATH_OUTSIDE_WORKDIR");
    expect(errorCode(await upload("a/..", "!", { overwrite: true }))).toBe("ROOT_MUTATION_NOT_ALLOWED");
  });

  test("argument checks in order: revision/overwrite combination, encoded length, strict base64, decoded length", async () => {
    expect(errorCode(await upload("x.bin", "!", { overwrite: true }, "small"))).toBe("EXPECTED_REVISION_REQUIRED");
    expect(errorCode(await upload("x.bin", "!", { expected_revision: STALE }, "small"))).toBe("EXPECTED_REVISION_NOT_ALLOWED");
    expect(errorCode(await upload("x.bin", "!", { overwrite: false, expected_revision: STALE }, "small"))).toBe("EXPECTED_REVISION_NOT_ALLOWED");
    // max 10 bytes → at most 4 × ceil(10 / 3) = 16 encoded characters, checked before validity
    expect(errorCode(await upload("x.bin", "!".repeat(17), {}, "small"))).toBe("BINARY_PAYLOAD_TOO_LARGE");
    expect(errorCode(await upload("x.bin", "!".repeat(16), {}, "small"))).toBe("INVALID_BASE64");
    // 16 characters without padding decode to 12 bytes; with two pad characters to 10
    expect(errorCode(await upload("x.bin", "A".repeat(16), {}, "small"))).toBe("BINARY_PAYLOAD_TOO_LARGE");
    expect(errorCode(await upload("x.bin", `${"A".repeat(15)}=`, {}, "small"))).toBe("BINARY_PAYLOAD_TOO_LARGE");
    expect(structured(await upload("x.bin", `${"A".repeat(14)}==`, {}, "small"))["bytes_written"]).toBe(10);
    expect(existsSync(join(dir.path, "small/x.bin"))).toBe(true);
  });

  test("only strict RFC 4648 base64 is accepted", async () => {
    const invalid = [
      "QQ", // length not a multiple of 4
      "QQ=",
      "QUJDRA",
      "Q===", // three pad characters
      "====",
      "QQ==QQ==", // padding in the middle
      "Q=Q=",
      "QUJD\n", // line break
      "QU JD",
      " QUJD",
      "QUJD\r\n",
      "QU\tJ",
      "-_-_", // URL-safe alphabet
      "QUJ\u00e9",
    ];
    for (const data of invalid) expect(errorCode(await upload("strict.bin", data))).toBe("INVALID_BASE64");
    expect(existsSync(join(bin, "strict.bin"))).toBe(false);
    for (const [i, data] of ["QUJD", "QUI=", "QQ==", "+/+/"].entries()) {
      const r = structured(await upload(`valid-${i}.bin`, data));
      expect(readFileSync(join(bin, `valid-${i}.bin`))).toEqual(Buffer.from(data, "base64"));
      expect(r["bytes_written"]).toBe(Buffer.from(data, "base64").length);
    }
  });
});
