import { afterAll, describe, expect, test } from "bun:test";
import { closeSync, constants, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { DT, readDirents } from "../../src/shared/ffi/dirents.ts";

const root = mkdtempSync(join(tmpdir(), "sfs-dirents-"));
const shmDirs: string[] = [];
afterAll(() => {
  for (const d of [root, ...shmDirs]) rmSync(d, { recursive: true, force: true });
});

const openDir = (p: string) => openSync(p, constants.O_RDONLY | constants.O_DIRECTORY);

describe("readDirents: getdents64 through the handle", () => {
  test("every entry once with its type, . and .. left out, names outside ASCII decoded", () => {
    const d = join(root, "kinds");
    mkdirSync(join(d, "sub"), { recursive: true });
    writeFileSync(join(d, "file.txt"), "");
    writeFileSync(join(d, "é€😀.md"), "");
    symlinkSync("file.txt", join(d, "link"));
    const fd = openDir(d);
    try {
      const got = readDirents(fd).sort((a, b) => (a.name! < b.name! ? -1 : 1));
      expect(got).toEqual([
        { name: "file.txt", type: DT.REG },
        { name: "link", type: DT.LNK },
        { name: "sub", type: DT.DIR },
        { name: "é€😀.md", type: DT.REG },
      ]);
    } finally {
      closeSync(fd);
    }
  });

  test("a name that is not valid UTF-8 comes as null, never as a lossy string", () => {
    const d = join(root, "invalid");
    mkdirSync(d);
    writeFileSync(Buffer.concat([Buffer.from(`${d}/bad-`), Buffer.from([0xff, 0xfe])]), "");
    writeFileSync(join(d, "bad-\uFFFD"), "");
    const fd = openDir(d);
    try {
      const names = readDirents(fd).map((e) => e.name);
      expect(names.sort()).toEqual(["bad-\uFFFD", null].sort());
    } finally {
      closeSync(fd);
    }
  });

  test("a directory larger than one 64 KiB read comes whole, and a second read of the same handle starts again", () => {
    // 3,000 creates take seconds on a loaded disk; the directory's size in entries, not the filesystem,
    // is what a second 64 KiB read is about, so it is made on tmpfs where there is one
    const d = join(existsSync("/dev/shm") ? mkdtempSync(join("/dev/shm", "sfs-dirents-")) : root, "large");
    mkdirSync(d);
    shmDirs.push(dirname(d));
    const want: string[] = [];
    for (let i = 0; i < 3000; i++) {
      const name = `entry-with-a-longer-name-${String(i).padStart(5, "0")}`;
      writeFileSync(join(d, name), "");
      want.push(name);
    }
    const fd = openDir(d);
    try {
      expect(
        readDirents(fd)
          .map((e) => e.name!)
          .sort(),
      ).toEqual(want);
      expect(readDirents(fd)).toHaveLength(3000);
    } finally {
      closeSync(fd);
    }
  });

  test("a handle that is not a directory fails with the OS code, as fs errors do", () => {
    const f = join(root, "plain");
    writeFileSync(f, "x");
    const fd = openSync(f, "r");
    try {
      expect(() => readDirents(fd)).toThrow(expect.objectContaining({ code: "ENOTDIR" }));
    } finally {
      closeSync(fd);
    }
  });
});
