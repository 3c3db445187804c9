/** Temporary directories and config files for tests: real directories, removed afterwards. */
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { type Table, toToml } from "./toml.ts";

export const REPO_ROOT = join(import.meta.dir, "..", "..");
export const CLI = join(REPO_ROOT, "src", "main", "cli.ts");
export const BUN = process.execPath;
/**
 * How a test starts `serverfs`: the sources under Bun, or the compiled single file when
 * `SERVERFS_BIN` names one (`npm run test:compiled` runs the end-to-end suites that way).
 */
export const SERVERFS: readonly string[] = process.env["SERVERFS_BIN"] ? [resolve(REPO_ROOT, process.env["SERVERFS_BIN"])] : [BUN, CLI];
/** The same as one shell word list, for tests that go through a shell (pipes, script(1)). */
export const SERVERFS_SHELL = SERVERFS.map((w) => `"${w}"`).join(" ");

export interface TempDir {
  path: string;
  file(rel: string, content?: string | Uint8Array): string;
  dir(rel: string): string;
  remove(): void;
}

/**
 * Where `tempDir(…, { inMemory: true })` puts a tree: a tmpfs, where creating 150,000 files takes
 * seconds instead of the minute a loaded virtual disk takes; the usual temp directory where there is none.
 */
const MEMORY_TMP = existsSync("/dev/shm") && statSync("/dev/shm").isDirectory() ? "/dev/shm" : tmpdir();

export function tempDir(prefix = "serverfs-test-", opts: { inMemory?: boolean } = {}): TempDir {
  const path = realpathSync(mkdtempSync(join(opts.inMemory ? MEMORY_TMP : tmpdir(), prefix)));
  return {
    path,
    file(rel, content = "") {
      const p = join(path, rel);
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, content);
      return p;
    },
    dir(rel) {
      const p = join(path, rel);
      mkdirSync(p, { recursive: true });
      return p;
    },
    remove() {
      rmSync(path, { recursive: true, force: true });
    },
  };
}

/** Writes `config` as TOML into `dir` and returns the file's path. */
export function writeConfig(dir: string, config: Table, name = "serverfs.toml"): string {
  const p = join(dir, name);
  writeFileSync(p, toToml(config));
  return p;
}
