/**
 * The docs name source files (docs/architecture.md is a map of them); a file moved or split without
 * its docs leaves a reader looking for something that is not there. Every path under src/, test/ or
 * scripts/ that README.md or a doc in docs/ names must exist. Paths inside a workdir in examples
 * (`repo:src/x.ts`, `src/../x`) are not the repository's and are left alone.
 */
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");
const REPO_PATH = /(?<![\w:./~$-])((?:src|test|scripts)\/[\w./-]*\w)/g;

test("every repository path README.md and docs/*.md name exists", () => {
  const docs = ["README.md", ...[...new Bun.Glob("docs/*.md").scanSync({ cwd: ROOT })].sort()];
  const missing: string[] = [];
  let named = 0;
  for (const doc of docs) {
    for (const m of readFileSync(join(ROOT, doc), "utf8").matchAll(REPO_PATH)) {
      const path = m[1]!;
      if (path.split("/").includes("..")) continue;
      named++;
      if (!existsSync(join(ROOT, path))) missing.push(`${doc}: ${path}`);
    }
  }
  expect(missing).toEqual([]);
  expect(named).toBeGreaterThan(50);
});
