import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ServerFsError } from "../../src/shared/errors.ts";
import { newTaskId } from "../../src/shared/ids.ts";
import { ensureResultsDir, readSpoolChunk, removeLeftoverTemps, removeSpool, resultsDir, writeSpool } from "../../src/shared/spool.ts";
import { byteLength, encoder } from "../../src/shared/utf8.ts";
import { type TempDir, tempDir } from "../helpers/workspace.ts";

const utf8 = (text: string): Uint8Array => encoder.encode(text);

const sha256 = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");

/** The code a call fails with, or null when it succeeds. */
function codeOf(fn: () => unknown): string | null {
  try {
    fn();
  } catch (e) {
    return e instanceof ServerFsError ? e.code : `uncoded ${String(e)}`;
  }
  return null;
}

/** Follows next_offset_bytes from 0 until eof and returns the chunks. */
function readAll(stateDir: string, taskId: string, size: number, maxBytes: number): string[] {
  const chunks: string[] = [];
  let offset = 0;
  for (;;) {
    const c = readSpoolChunk(stateDir, taskId, size, offset, maxBytes);
    expect(c.offset_bytes).toBe(offset);
    expect(c.next_offset_bytes - offset).toBe(byteLength(c.text));
    expect(byteLength(c.text)).toBeLessThanOrEqual(maxBytes);
    chunks.push(c.text);
    if (c.eof) return chunks;
    expect(c.text.length).toBeGreaterThan(0);
    offset = c.next_offset_bytes;
  }
}

let dir: TempDir;
let stateDir: string;
beforeEach(() => {
  dir = tempDir("serverfs-spool-");
  stateDir = dir.path;
});
afterEach(() => {
  dir.remove();
});

describe("storage and write", () => {
  test("results/ is created 0700 and the spool file 0600, holding exactly the text's bytes", () => {
    const id = newTaskId();
    const text = `héllo ${"€".repeat(100_000)} 😀`;
    const written = writeSpool(stateDir, id, utf8(text));
    expect(written).toEqual({ size_bytes: byteLength(text), sha256: sha256(text) });
    expect(statSync(resultsDir(stateDir)).mode & 0o777).toBe(0o700);
    const file = join(resultsDir(stateDir), `${id}.txt`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file).equals(Buffer.from(text, "utf8"))).toBe(true);
    expect(readdirSync(resultsDir(stateDir))).toEqual([`${id}.txt`]);
  });

  test("ensureResultsDir creates the directory 0700 and accepts it again", () => {
    ensureResultsDir(stateDir);
    ensureResultsDir(stateDir);
    expect(statSync(resultsDir(stateDir)).mode & 0o777).toBe(0o700);
  });

  test("an existing final file is a storage error; it is left as it was and no temporary file remains", () => {
    const id = newTaskId();
    writeSpool(stateDir, id, utf8("first"));
    expect(codeOf(() => writeSpool(stateDir, id, utf8("second")))).toBe("AGENT_RESULT_STORAGE_ERROR");
    expect(readFileSync(join(resultsDir(stateDir), `${id}.txt`), "utf8")).toBe("first");
    expect(readdirSync(resultsDir(stateDir))).toEqual([`${id}.txt`]);
  });

  const dirWithMode = (mode: number) => () => {
    mkdirSync(resultsDir(stateDir));
    chmodSync(resultsDir(stateDir), mode);
  };
  test.each([
    ["group-readable", dirWithMode(0o750)],
    ["other-executable", dirWithMode(0o701)],
    ["a symlink", () => symlinkSync(dir.dir("elsewhere"), resultsDir(stateDir))],
    ["a regular file", () => writeFileSync(resultsDir(stateDir), "")],
  ])("a results directory that is %s is a storage error for every operation", (_, make) => {
    make();
    const id = newTaskId();
    expect(codeOf(() => ensureResultsDir(stateDir))).toBe("AGENT_RESULT_STORAGE_ERROR");
    expect(codeOf(() => writeSpool(stateDir, id, utf8("x")))).toBe("AGENT_RESULT_STORAGE_ERROR");
    expect(codeOf(() => readSpoolChunk(stateDir, id, 1, 0, 10))).toBe("AGENT_RESULT_STORAGE_ERROR");
    expect(codeOf(() => removeLeftoverTemps(stateDir))).toBe("AGENT_RESULT_STORAGE_ERROR");
    expect(removeSpool(stateDir, id)).toBe(false);
    expect(existsSync(join(dir.path, "elsewhere", `${id}.txt`))).toBe(false);
  });

  test.each([["agt_XYZ"], ["../agt_0123456789abcdef01234567"], ["agt_0123456789abcdef0123456/"], [""]])(
    "a task id %j outside the format is an unknown task",
    (id) => {
      expect(codeOf(() => writeSpool(stateDir, id, utf8("x")))).toBe("AGENT_TASK_NOT_FOUND");
      expect(codeOf(() => readSpoolChunk(stateDir, id, 1, 0, 10))).toBe("AGENT_TASK_NOT_FOUND");
      expect(existsSync(resultsDir(stateDir))).toBe(false);
    },
  );

  test("a text over 8 MiB is never spooled", () => {
    expect(codeOf(() => writeSpool(stateDir, newTaskId(), utf8("a".repeat(8_388_609))))).toBe("AGENT_RESULT_TOO_LARGE");
    expect(existsSync(resultsDir(stateDir))).toBe(false);
  });

  test("leftover temporary files are removed at startup; nothing else is touched", () => {
    const id = newTaskId();
    writeSpool(stateDir, id, utf8("kept"));
    const results = resultsDir(stateDir);
    writeFileSync(join(results, `.${id}.0123456789abcdef.tmp`), "partial", { mode: 0o600 });
    writeFileSync(join(results, ".other.tmp"), "partial", { mode: 0o600 });
    writeFileSync(join(results, "notes.tmp"), "not hidden", { mode: 0o600 });
    mkdirSync(join(results, ".dir.tmp"));
    expect(removeLeftoverTemps(stateDir)).toBe(2);
    expect(readdirSync(results).sort()).toEqual([".dir.tmp", `${id}.txt`, "notes.tmp"]);
    expect(removeLeftoverTemps(stateDir)).toBe(0);
  });

  test("with no results directory there are no leftovers", () => {
    expect(removeLeftoverTemps(stateDir)).toBe(0);
  });
});

describe("spool removal for GC", () => {
  test("an existing spool file is unlinked and GC may proceed; a missing one also lets GC proceed", () => {
    const id = newTaskId();
    writeSpool(stateDir, id, utf8("done"));
    expect(removeSpool(stateDir, id)).toBe(true);
    expect(existsSync(join(resultsDir(stateDir), `${id}.txt`))).toBe(false);
    expect(removeSpool(stateDir, id)).toBe(true);
    expect(removeSpool(join(stateDir, "never-created"), id)).toBe(true);
  });

  test("an entry that is not a regular file is kept and the task skipped", () => {
    ensureResultsDir(stateDir);
    const asDir = newTaskId();
    mkdirSync(join(resultsDir(stateDir), `${asDir}.txt`));
    expect(removeSpool(stateDir, asDir)).toBe(false);
    const asLink = newTaskId();
    const target = dir.file("target.txt", "precious");
    symlinkSync(target, join(resultsDir(stateDir), `${asLink}.txt`));
    expect(removeSpool(stateDir, asLink)).toBe(false);
    expect(readFileSync(target, "utf8")).toBe("precious");
    expect(existsSync(join(resultsDir(stateDir), `${asDir}.txt`))).toBe(true);
  });

  test("an id outside the format can have no spool file: GC may proceed", () => {
    expect(removeSpool(stateDir, "legacy-task-1")).toBe(true);
  });
});

describe("read", () => {
  test.each([
    ["3-byte characters", "€".repeat(100_000), 65_535],
    ["3-byte characters", "€".repeat(20_000), 7],
    ["4-byte emoji", "😀".repeat(10_000), 4],
    ["mixed widths", "aé€😀".repeat(5_000), 4],
    ["mixed widths", "aé€😀".repeat(5_000), 5],
    ["a BOM and mixed widths", `\uFEFF${"x€😀é\n".repeat(30_000)}`, 65_536],
  ])("chunks of %s with max_bytes %d concatenate to the exact file bytes and hash", (_, text, maxBytes) => {
    const id = newTaskId();
    const { size_bytes, sha256: hash } = writeSpool(stateDir, id, utf8(text));
    const chunks = readAll(stateDir, id, size_bytes, maxBytes);
    const bytes = Buffer.concat(chunks.map((c) => Buffer.from(c, "utf8")));
    expect(bytes.equals(readFileSync(join(resultsDir(stateDir), `${id}.txt`)))).toBe(true);
    expect(sha256(bytes)).toBe(hash);
    expect(chunks.join("")).toBe(text);
  });

  test("a chunk is cut back to the last complete character and the next one starts there", () => {
    const id = newTaskId();
    const { size_bytes } = writeSpool(stateDir, id, utf8("ab€c"));
    expect(readSpoolChunk(stateDir, id, size_bytes, 0, 3)).toEqual({ text: "ab", offset_bytes: 0, next_offset_bytes: 2, eof: false });
    expect(readSpoolChunk(stateDir, id, size_bytes, 2, 4)).toEqual({ text: "€c", offset_bytes: 2, next_offset_bytes: 6, eof: true });
  });

  test("an offset inside a character is INVALID_RESULT_OFFSET", () => {
    const id = newTaskId();
    const { size_bytes } = writeSpool(stateDir, id, utf8("€€€😀"));
    expect(codeOf(() => readSpoolChunk(stateDir, id, size_bytes, 1, 10))).toBe("INVALID_RESULT_OFFSET");
    expect(codeOf(() => readSpoolChunk(stateDir, id, size_bytes, 2, 1))).toBe("INVALID_RESULT_OFFSET");
    expect(codeOf(() => readSpoolChunk(stateDir, id, size_bytes, 10, 4))).toBe("INVALID_RESULT_OFFSET");
    expect(codeOf(() => readSpoolChunk(stateDir, id, size_bytes, 12, 1))).toBe("INVALID_RESULT_OFFSET");
  });

  test("max_bytes too small for the next character is INVALID_RESULT_LIMIT", () => {
    const id = newTaskId();
    const { size_bytes } = writeSpool(stateDir, id, utf8("€😀"));
    expect(codeOf(() => readSpoolChunk(stateDir, id, size_bytes, 0, 2))).toBe("INVALID_RESULT_LIMIT");
    expect(codeOf(() => readSpoolChunk(stateDir, id, size_bytes, 3, 3))).toBe("INVALID_RESULT_LIMIT");
    expect(readSpoolChunk(stateDir, id, size_bytes, 3, 4).text).toBe("😀");
  });

  test("any other UTF-8 defect in the chunk is INVALID_RESULT_OFFSET", () => {
    ensureResultsDir(stateDir);
    const id = newTaskId();
    writeFileSync(join(resultsDir(stateDir), `${id}.txt`), Buffer.from([0x61, 0xff, 0x62, 0xe2, 0x82]), { mode: 0o600 });
    expect(codeOf(() => readSpoolChunk(stateDir, id, 5, 0, 5))).toBe("INVALID_RESULT_OFFSET");
    expect(readSpoolChunk(stateDir, id, 5, 0, 1).text).toBe("a");
    // an invalid second byte is not an incomplete character
    writeFileSync(join(resultsDir(stateDir), `${id}.txt`), Buffer.from([0x61, 0xe0, 0x80]), { mode: 0o600 });
    expect(codeOf(() => readSpoolChunk(stateDir, id, 3, 0, 3))).toBe("INVALID_RESULT_OFFSET");
  });

  test("offset == size answers an empty text with eof; offset > size is INVALID_RESULT_OFFSET", () => {
    const id = newTaskId();
    const { size_bytes } = writeSpool(stateDir, id, utf8("abc€"));
    expect(readSpoolChunk(stateDir, id, size_bytes, size_bytes, 1)).toEqual({
      text: "",
      offset_bytes: size_bytes,
      next_offset_bytes: size_bytes,
      eof: true,
    });
    expect(codeOf(() => readSpoolChunk(stateDir, id, size_bytes, size_bytes + 1, 1))).toBe("INVALID_RESULT_OFFSET");
  });

  test("max_bytes outside 1..65,536 is INVALID_RESULT_LIMIT, checked before the offset; a negative offset is INVALID_RESULT_OFFSET", () => {
    const id = newTaskId();
    const { size_bytes } = writeSpool(stateDir, id, utf8("a".repeat(70_000)));
    for (const max of [0, -1, 65_537, 1.5, Number.NaN]) {
      expect(codeOf(() => readSpoolChunk(stateDir, id, size_bytes, -1, max))).toBe("INVALID_RESULT_LIMIT");
    }
    expect(codeOf(() => readSpoolChunk(stateDir, id, size_bytes, -1, 1))).toBe("INVALID_RESULT_OFFSET");
    expect(codeOf(() => readSpoolChunk(stateDir, id, size_bytes, 0.5, 1))).toBe("INVALID_RESULT_OFFSET");
    expect(byteLength(readSpoolChunk(stateDir, id, size_bytes, 0, 65_536).text)).toBe(65_536);
  });

  test("a size different from the recorded one is AGENT_RESULT_STORAGE_ERROR", () => {
    const id = newTaskId();
    const { size_bytes } = writeSpool(stateDir, id, utf8("abc"));
    expect(codeOf(() => readSpoolChunk(stateDir, id, size_bytes + 1, 0, 10))).toBe("AGENT_RESULT_STORAGE_ERROR");
    expect(codeOf(() => readSpoolChunk(stateDir, id, size_bytes - 1, 0, 10))).toBe("AGENT_RESULT_STORAGE_ERROR");
  });

  test("a group-readable or other-readable spool file is AGENT_RESULT_STORAGE_ERROR", () => {
    const id = newTaskId();
    const { size_bytes } = writeSpool(stateDir, id, utf8("abc"));
    const file = join(resultsDir(stateDir), `${id}.txt`);
    chmodSync(file, 0o640);
    expect(codeOf(() => readSpoolChunk(stateDir, id, size_bytes, 0, 10))).toBe("AGENT_RESULT_STORAGE_ERROR");
    chmodSync(file, 0o604);
    expect(codeOf(() => readSpoolChunk(stateDir, id, size_bytes, 0, 10))).toBe("AGENT_RESULT_STORAGE_ERROR");
    chmodSync(file, 0o600);
    expect(readSpoolChunk(stateDir, id, size_bytes, 0, 10).text).toBe("abc");
  });

  test("a symlink, directory or FIFO in place of the file is AGENT_RESULT_STORAGE_ERROR, without blocking", () => {
    ensureResultsDir(stateDir);
    const target = dir.file("target.txt", "abc");
    chmodSync(target, 0o600);
    const link = newTaskId();
    symlinkSync(target, join(resultsDir(stateDir), `${link}.txt`));
    expect(codeOf(() => readSpoolChunk(stateDir, link, 3, 0, 10))).toBe("AGENT_RESULT_STORAGE_ERROR");
    const sub = newTaskId();
    mkdirSync(join(resultsDir(stateDir), `${sub}.txt`), { mode: 0o700 });
    expect(codeOf(() => readSpoolChunk(stateDir, sub, 0, 0, 10))).toBe("AGENT_RESULT_STORAGE_ERROR");
    const fifo = newTaskId();
    expect(Bun.spawnSync(["mkfifo", "-m", "600", join(resultsDir(stateDir), `${fifo}.txt`)]).exitCode).toBe(0);
    expect(codeOf(() => readSpoolChunk(stateDir, fifo, 0, 0, 10))).toBe("AGENT_RESULT_STORAGE_ERROR");
  });

  test("a missing spool file or results directory is AGENT_RESULT_NOT_RETRIEVABLE", () => {
    const id = newTaskId();
    expect(codeOf(() => readSpoolChunk(stateDir, id, 3, 0, 10))).toBe("AGENT_RESULT_NOT_RETRIEVABLE");
    ensureResultsDir(stateDir);
    expect(codeOf(() => readSpoolChunk(stateDir, id, 3, 0, 10))).toBe("AGENT_RESULT_NOT_RETRIEVABLE");
    writeSpool(stateDir, id, utf8("abc"));
    rmSync(join(resultsDir(stateDir), `${id}.txt`));
    expect(codeOf(() => readSpoolChunk(stateDir, id, 3, 0, 10))).toBe("AGENT_RESULT_NOT_RETRIEVABLE");
  });
});
