/**
 * The key file of the multi-round-trip requestState (src/main/mcp/agent/elicitation/state-key.ts,
 * docs/elicitation.md#protocol-revisions): created once, 0600, 32 bytes, read back by whoever comes
 * later, one key for creators that race; refused, never replaced, when it could be anyone's.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { chmodSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadStateKey, STATE_KEY_FILE, StateKeyUnavailable } from "../../src/main/mcp/agent/elicitation/state-key.ts";
import { BUN, REPO_ROOT, type TempDir, tempDir } from "../helpers/workspace.ts";

let dir: TempDir;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => dir.remove());

const keyPath = () => join(dir.path, STATE_KEY_FILE);
const refusal = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    if (e instanceof StateKeyUnavailable) return e.message;
    throw e;
  }
  throw new Error("the key was not refused");
};

describe("loadStateKey", () => {
  test("creates a 0600 file of 32 random bytes once; later loads read the same key", () => {
    const key = loadStateKey(dir.path);
    expect(key.length).toBe(32);
    expect(statSync(keyPath()).mode & 0o777).toBe(0o600);
    expect(Buffer.from(readFileSync(keyPath())).equals(Buffer.from(key))).toBe(true);
    expect(loadStateKey(dir.path)).toEqual(key);
  });

  test("processes that create it at once end up with one key", async () => {
    const module = join(REPO_ROOT, "src/main/mcp/agent/elicitation/state-key.ts");
    const script = `const { loadStateKey } = await import(${JSON.stringify(module)}); console.log(Buffer.from(loadStateKey(${JSON.stringify(dir.path)})).toString("hex"));`;
    const procs = Array.from({ length: 4 }, () => Bun.spawn([BUN, "-e", script], { stdout: "pipe", stderr: "pipe" }));
    const keys = await Promise.all(procs.map(async (p) => (await new Response(p.stdout).text()).trim()));
    expect(keys[0]).toMatch(/^[0-9a-f]{64}$/);
    for (const key of keys) expect(key).toBe(keys[0]!);
    expect(readFileSync(keyPath()).toString("hex")).toBe(keys[0]!);
  });

  test("a key file group or others may read, of another size, or a symbolic link is refused and left as it is", () => {
    writeFileSync(keyPath(), Buffer.alloc(32, 7), { mode: 0o644 });
    chmodSync(keyPath(), 0o644);
    expect(refusal(() => loadStateKey(dir.path))).toContain("mode 0644");
    chmodSync(keyPath(), 0o600);
    writeFileSync(keyPath(), Buffer.alloc(31, 7));
    expect(refusal(() => loadStateKey(dir.path))).toContain("31 bytes");
    writeFileSync(keyPath(), Buffer.alloc(33, 7));
    expect(refusal(() => loadStateKey(dir.path))).toContain("more bytes");
    expect(readFileSync(keyPath()).length).toBe(33);

    const other = tempDir();
    try {
      writeFileSync(join(other.path, "target"), Buffer.alloc(32, 7), { mode: 0o600 });
      symlinkSync(join(other.path, "target"), join(other.path, STATE_KEY_FILE));
      expect(refusal(() => loadStateKey(other.path))).toContain("symbolic link");
    } finally {
      other.remove();
    }
  });

  test("a missing state directory is refused: the key waits for the Bridge to make it", () => {
    expect(refusal(() => loadStateKey(join(dir.path, "absent")))).toContain("cannot be created");
  });
});
