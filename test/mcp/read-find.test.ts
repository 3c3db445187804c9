import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, symlinkSync, writeFileSync } from "node:fs";
import { callAudited, errorCode, type McpSession, startStdio, structured } from "../helpers/mcp-client.ts";
import { startInProcess } from "../helpers/mcp-in-process.ts";
import { BUN, CLI, type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

interface Found {
  matches: { path: string }[];
  returned: number;
  truncated: boolean;
}

let dir: TempDir;
let mcp: McpSession;

const find = async (args: Record<string, unknown>) => structured<Found>(await mcp.call("find_files", { workdir: "repo", ...args }));
const paths = (f: Found) => f.matches.map((m) => m.path);

beforeAll(async () => {
  dir = tempDir();
  const ws = `${dir.path}/ws`;
  for (const f of ["a/b/c.yml", "a/docker-compose.yml", "compose.yml", "z.yml", "a/.hidden.yml", ".git/x.yml", "keys.pem/s.yml"]) {
    dir.file(`ws/${f}`, "x");
  }
  dir.file("ws/private/p.yml", "x");
  dir.file("ws/notes/keep.yml", "x");
  dir.file("ws/dir.yml/inside.txt", "x");
  symlinkSync("compose.yml", `${ws}/link.yml`);
  symlinkSync("a", `${ws}/linkdir`);
  Bun.spawnSync(["mkfifo", `${ws}/fifo.yml`]);
  writeFileSync(Buffer.concat([Buffer.from(`${ws}/`), Buffer.from([0xff, 0x2e, 0x79, 0x6d, 0x6c])]), "x");
  dir.file("walk/one/1.txt", "x");
  dir.file("walk/two/2.txt", "x");
  dir.file("walk/two/3.txt", "x");
  const config = writeConfig(dir.path, {
    limits: { default_search_results: 3, max_search_results: 5, max_walk_entries: 1000 },
    workdirs: [
      { slot: 1, alias: "repo", path: ws, extra_deny_globs: ["private/**", "a/b"] },
      { slot: 2, alias: "hid", path: ws, allow_hidden: true },
    ],
  });
  mcp = await startInProcess(config);
}, 60_000);
afterAll(async () => {
  await mcp?.close();
  dir?.remove();
}, 30_000);

describe("find_files: matching", () => {
  test("the pattern is a whole-name glob on the basename, and matches come in walk order", async () => {
    expect(paths(await find({ pattern: "*compose*.yml" }))).toEqual(["a/docker-compose.yml", "compose.yml"]);
  });
  test("walk order is depth-first with a directory's contents right after its own entry", async () => {
    const all = paths(await find({ pattern: "*.yml", path: "", limit: 5 }));
    expect(all).toEqual(["a/docker-compose.yml", "compose.yml", "notes/keep.yml", "z.yml"]);
  });
  test("matching is case-sensitive and never sees a / in a basename", async () => {
    expect((await find({ pattern: "*.YML" })).returned).toBe(0);
    expect((await find({ pattern: "a/*.yml" })).returned).toBe(0);
  });
  test("only regular files match: not symlinks, directories, FIFOs or names that are not UTF-8", async () => {
    const all = paths(await find({ pattern: "*", limit: 5, path: "" }));
    expect(all).not.toContain("link.yml");
    expect(all).not.toContain("dir.yml");
    expect(all).not.toContain("fifo.yml");
    expect(paths(await find({ pattern: "link.yml" }))).toEqual([]);
    expect(paths(await find({ pattern: "fifo.yml" }))).toEqual([]);
    expect(paths(await find({ pattern: "?.yml" }))).toEqual(["z.yml"]);
  });
  test("a symlinked directory is never entered", async () => {
    expect(paths(await find({ pattern: "docker-compose.yml" }))).toEqual(["a/docker-compose.yml"]);
  });
  test("path restricts the walk to a subtree and results keep full paths", async () => {
    expect(paths(await find({ pattern: "*", path: "./dir.yml" }))).toEqual(["dir.yml/inside.txt"]);
  });
});

describe("find_files: pruning", () => {
  test("hidden entries are neither matched nor descended unless allow_hidden", async () => {
    expect(paths(await find({ pattern: "*.yml", limit: 5 }))).not.toContain("a/.hidden.yml");
    const hid = structured<Found>(await mcp.call("find_files", { workdir: "hid", pattern: "*.yml", limit: 5 }));
    expect(paths(hid).slice(0, 2)).toEqual([".git/x.yml", "a/.hidden.yml"]);
  });
  test("denied directories (built-in, NAME/** and whole-path globs) are never descended", async () => {
    const all = paths(await find({ pattern: "*.yml", limit: 5 }));
    expect(all.some((p) => p.startsWith("keys.pem/") || p.startsWith("private/") || p.startsWith("a/b/"))).toBe(false);
    const hid = paths(structured<Found>(await mcp.call("find_files", { workdir: "hid", pattern: "c.yml" })));
    expect(hid).toEqual(["a/b/c.yml"]);
  });
});

describe("find_files: limits and truncation", () => {
  test("the default limit is min(default_search_results, max_search_results); limit + 1 matches truncate", async () => {
    const r = await find({ pattern: "*.yml" });
    expect(r).toMatchObject({ returned: 3, truncated: true });
    expect(paths(r)).toEqual(["a/docker-compose.yml", "compose.yml", "notes/keep.yml"]);
  });
  test("exactly limit matches in a complete walk is not truncated", async () => {
    expect(await find({ pattern: "*.yml", limit: 4 })).toMatchObject({ returned: 4, truncated: false });
  });
  test("a limit above max_search_results is silently capped", async () => {
    expect((await find({ pattern: "*", limit: 10_000 })).returned).toBe(5);
  });
});

describe("find_files: target and schema", () => {
  test("path must be a directory", async () => {
    expect(errorCode(await mcp.call("find_files", { workdir: "repo", pattern: "*", path: "z.yml" }))).toBe("NOT_A_DIRECTORY");
    expect(errorCode(await mcp.call("find_files", { workdir: "repo", pattern: "*", path: "linkdir" }))).toBe("SYMLINK_NOT_ALLOWED");
    expect(errorCode(await mcp.call("find_files", { workdir: "repo", pattern: "*", path: "nope" }))).toBe("PATH_NOT_FOUND");
    expect(errorCode(await mcp.call("find_files", { workdir: "repo", pattern: "*", path: "keys.pem" }))).toBe("DENIED_PATH");
  });
  test("an empty or missing pattern and a zero limit are INVALID_ARGUMENT", async () => {
    expect(errorCode(await mcp.call("find_files", { workdir: "repo", pattern: "" }))).toBe("INVALID_ARGUMENT");
    expect(errorCode(await mcp.call("find_files", { workdir: "repo" }))).toBe("INVALID_ARGUMENT");
    expect(errorCode(await mcp.call("find_files", { workdir: "repo", pattern: "*", limit: 0 }))).toBe("INVALID_ARGUMENT");
  });
  test("the input schema declares defaults and the capped limit's maximum", async () => {
    const { tools } = await mcp.client.listTools();
    const props = (tools.find((t) => t.name === "find_files")!.inputSchema as { properties: Record<string, unknown> }).properties;
    expect(props["limit"]).toMatchObject({ type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER, default: 3 });
    expect(props["path"]).toMatchObject({ default: "" });
    expect(props["pattern"]).toMatchObject({ type: "string", minLength: 1 });
  });
  test("tool_call records returned and truncated, never the pattern", async () => {
    const { record } = await callAudited(mcp, "find_files", { workdir: "repo", pattern: "*zq-unique-pattern*" });
    expect(record).toMatchObject({ tool: "find_files", success: true, path: "", returned: 0, truncated: false });
    expect(mcp.stderr()).not.toContain("zq-unique-pattern");
  });
});

describe("max_walk_entries", () => {
  test("every entry read counts, matched or not; visiting more than max_walk_entries truncates", async () => {
    // walk/: one, one/1.txt, two, two/2.txt, two/3.txt = 5 entries
    const cfg = (max: number) =>
      writeConfig(dir.path, { limits: { max_walk_entries: max }, workdirs: [{ slot: 1, alias: "w", path: `${dir.path}/walk` }] }, `walk-${max}.toml`);
    const capped = await startInProcess(cfg(4));
    const full = await startInProcess(cfg(5));
    try {
      const a = structured<Found>(await capped.call("find_files", { workdir: "w", pattern: "*.txt" }));
      expect(a).toMatchObject({ truncated: true });
      expect(paths(a)).toEqual(["one/1.txt", "two/2.txt"]);
      const b = structured<Found>(await full.call("find_files", { workdir: "w", pattern: "*.txt" }));
      expect(b).toMatchObject({ truncated: false, returned: 3 });
    } finally {
      await capped.close();
      await full.close();
    }
  }, 60_000);
});

describe("walks: handles and unreadable entries", () => {
  test("a walk holds one handle per level: a wide tree walks under a small descriptor limit, a deep one is RESOURCE_EXHAUSTED", async () => {
    const t = tempDir();
    for (let i = 0; i < 150; i++) t.file(`wide/d${String(i).padStart(3, "0")}/e/f.txt`, "x");
    t.file(`deep/${Array.from({ length: 80 }, (_, i) => `l${i}`).join("/")}/f.txt`, "x");
    const config = writeConfig(t.path, {
      workdirs: [
        { slot: 1, alias: "wide", path: `${t.path}/wide` },
        { slot: 2, alias: "deep", path: `${t.path}/deep` },
      ],
    });
    const limited = await startStdio(config, {}, ["prlimit", "--nofile=48", "--"]);
    try {
      const wide = structured<Found>(await limited.call("find_files", { workdir: "wide", pattern: "f.txt", limit: 100 }));
      expect(wide).toMatchObject({ returned: 100, truncated: true });
      expect(errorCode(await limited.call("find_files", { workdir: "deep", pattern: "f.txt" }))).toBe("RESOURCE_EXHAUSTED");
      // The failed walk released its handles: the server still works.
      expect(errorCode(await limited.call("find_files", { workdir: "wide", pattern: "f.txt" }))).toBeNull();
    } finally {
      await limited.close();
      t.remove();
    }
  }, 60_000);
  // Needs an unprivileged user (root reads everything) who can also read this checkout.
  const NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"];
  const nobodyCanRunServer = Bun.spawnSync([...NOBODY, BUN, "-e", `require("fs").accessSync(${JSON.stringify(CLI)}, 4)`], { stderr: "ignore" }).exitCode === 0;
  if (!nobodyCanRunServer) console.warn("skipping the unprivileged-user walk test: this checkout is not readable by uid 65534");
  test.skipIf(!nobodyCanRunServer)(
    "unreadable subdirectories are skipped silently (server running as an unprivileged user)",
    async () => {
      const t = tempDir();
      chmodSync(t.path, 0o755);
      t.file("ws/open/a.txt", "x");
      t.file("ws/closed/b.txt", "x");
      t.file("ws/z.txt", "x");
      chmodSync(`${t.path}/ws/closed`, 0o000);
      const config = writeConfig(t.path, { workdirs: [{ slot: 1, alias: "u", path: `${t.path}/ws` }] });
      const nobody = await startStdio(config, {}, NOBODY);
      try {
        const r = structured<Found>(await nobody.call("find_files", { workdir: "u", pattern: "*.txt" }));
        expect(paths(r)).toEqual(["open/a.txt", "z.txt"]);
        expect(errorCode(await nobody.call("list_directory", { workdir: "u", path: "closed" }))).toBe("ACCESS_DENIED");
      } finally {
        await nobody.close();
        chmodSync(`${t.path}/ws/closed`, 0o755);
        t.remove();
      }
    },
    60_000,
  );
});
