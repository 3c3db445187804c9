/** Small tmpfs mounts for the disk-full tests and the disk-full stress ground (root only), and filling them. */
import { closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";

/** Mounts a tmpfs of `size` (e.g. "6m") at `at`; false where mount is refused (not root). */
export function mountTmpfs(at: string, size: string): boolean {
  mkdirSync(at, { recursive: true });
  return Bun.spawnSync(["mount", "-t", "tmpfs", "-o", `size=${size},mode=0700`, "tmpfs", at], { stderr: "pipe" }).exitCode === 0;
}

export function unmount(at: string): void {
  Bun.spawnSync(["umount", "-l", at], { stderr: "pipe" });
}

/** Fills the file system under `dir` to the last byte; returns the filler's path. */
export function fill(dir: string): string {
  const path = join(dir, "filler");
  const fd = openSync(path, "w");
  try {
    for (const size of [1 << 20, 1 << 16, 1 << 12, 1 << 9, 1]) {
      const chunk = Buffer.alloc(size, 7);
      for (;;) {
        try {
          writeSync(fd, chunk);
        } catch {
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return path;
}
