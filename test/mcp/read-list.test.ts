import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { symlinkSync, writeFileSync } from "node:fs";
import { callAudited, errorCode, type McpSession, structured } from "../helpers/mcp-client.ts";
import { startInProcess } from "../helpers/mcp-in-process.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

interface Entry {
  name: string;
  path: string;
  type: string;
  size: number | null;
  modified_at: string | null;
}
interface Listing {
  workdir: string;
  path: string;
  entries: Entry[];
  offset: number;
  limit: number;
  returned: number;
  has_more: boolean;
}

let dir: TempDir;
let mcp: McpSession;

const list = async (args: Record<string, unknown>) => structured<Listing>(await mcp.call("list_directory", args));
const names = (l: Listing) => l.entries.map((e) => e.name);

/** Every admitted name of a directory, collected page by page. */
async function allNames(workdir: string, path = ""): Promise<string[]> {
  const out: string[] = [];
  for (let offset = 0; ; ) {
    const page = await list({ workdir, path, offset, limit: 5 });
    out.push(...names(page));
    if (!page.has_more) return out;
    offset += page.returned;
  }
}

beforeAll(async () => {
  dir = tempDir();
  const ws = `${dir.path}/ws`;
  for (const name of ["a.txt", "b.md", "Z.txt", "é.txt", "～.txt", "😀.txt", ".hidden", ".env", "id_rsa", "x.pem", "y.bak"]) {
    dir.file(`ws/${name}`, "hello\n");
  }
  dir.file("ws/c/inner.txt", "x");
  dir.file("ws/docs/public.md", "p");
  dir.file("ws/docs/private.md", "p");
  dir.file("ws/secrets/s.txt", "s");
  dir.file("ws/.serverfs-tmp-0123456789abcdef", "t");
  dir.file("ws/.serverfs-disabled", "");
  symlinkSync("a.txt", `${ws}/link`);
  symlinkSync("c", `${ws}/dirlink`);
  Bun.spawnSync(["mkfifo", `${ws}/fifo`]);
  writeFileSync(Buffer.concat([Buffer.from(`${ws}/`), Buffer.from([0x62, 0xff, 0x2e, 0x74])]), "not utf-8 name");
  const config = writeConfig(dir.path, {
    defaults: { extra_deny_globs: ["*.bak"] },
    limits: { default_list_limit: 3, max_list_entries: 5 },
    workdirs: [
      { slot: 1, alias: "repo", path: ws, extra_deny_globs: ["secrets/**", "docs/private.md"] },
      { slot: 2, alias: "hid", path: ws, allow_hidden: true },
      { slot: 3, alias: "nodeny", path: ws, allow_hidden: true, disable_default_deny: true },
    ],
  });
  mcp = await startInProcess(config);
});
afterAll(async () => {
  await mcp?.close();
  dir?.remove();
});

describe("list_directory: order and paging", () => {
  test("entries are sorted by UTF-8 bytes (not UTF-16), hidden/reserved/denied/non-UTF-8 names left out", async () => {
    // U+FF5E sorts before U+1F600 in UTF-8 bytes although its UTF-16 units sort after.
    expect(await allNames("repo")).toEqual(["Z.txt", "a.txt", "b.md", "c", "dirlink", "docs", "fifo", "link", "é.txt", "～.txt", "😀.txt"]);
  });
  test("the default limit is min(default_list_limit, max_list_entries) and is echoed", async () => {
    const page = await list({ workdir: "repo" });
    expect(page).toMatchObject({ workdir: "repo", path: "", offset: 0, limit: 3, returned: 3, has_more: true });
    expect(names(page)).toEqual(["Z.txt", "a.txt", "b.md"]);
  });
  test("a limit above max_list_entries is silently capped and the cap echoed", async () => {
    const page = await list({ workdir: "repo", limit: 1000 });
    expect(page.limit).toBe(5);
    expect(page.returned).toBe(5);
  });
  test("pages are [offset, offset + limit) and has_more tells whether entries remain", async () => {
    const second = await list({ workdir: "repo", offset: 5, limit: 5 });
    expect(names(second)).toEqual(["docs", "fifo", "link", "é.txt", "～.txt"]);
    expect(second.has_more).toBe(true);
    const last = await list({ workdir: "repo", offset: 9, limit: 5 });
    expect(names(last)).toEqual(["～.txt", "😀.txt"]);
    expect(last.has_more).toBe(false);
    const exact = await list({ workdir: "repo", offset: 6, limit: 5 });
    expect(exact.returned).toBe(5);
    expect(exact.has_more).toBe(false);
  });
  test("an offset past the end returns no entries and has_more false", async () => {
    expect(await list({ workdir: "repo", offset: 11 })).toMatchObject({ entries: [], returned: 0, has_more: false, offset: 11 });
    expect(await list({ workdir: "repo", offset: 1_000_000 })).toMatchObject({ entries: [], has_more: false });
  });
});

describe("list_directory: entries", () => {
  test("files carry size; directories, symlinks and special files carry null; all carry an RFC 3339 second time", async () => {
    const byName = new Map((await list({ workdir: "repo", limit: 5 })).entries.map((e) => [e.name, e]));
    const more = (await list({ workdir: "repo", offset: 5, limit: 5 })).entries;
    for (const e of more) byName.set(e.name, e);
    expect(byName.get("a.txt")).toMatchObject({ path: "a.txt", type: "file", size: 6 });
    expect(byName.get("c")).toMatchObject({ type: "directory", size: null });
    expect(byName.get("link")).toMatchObject({ type: "symlink", size: null });
    expect(byName.get("dirlink")).toMatchObject({ type: "symlink", size: null });
    expect(byName.get("fifo")).toMatchObject({ type: "other", size: null });
    for (const e of byName.values()) expect(e.modified_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });
  test("entry paths are full normalized relative paths", async () => {
    const page = await list({ workdir: "repo", path: "./docs/" });
    expect(page.path).toBe("docs");
    expect(page.entries.map((e) => e.path)).toEqual(["docs/public.md"]);
  });
});

describe("policy in listings", () => {
  test("allow_hidden shows hidden names; the deny set and reserved names still apply", async () => {
    const all = await allNames("hid");
    expect(all).toContain(".hidden");
    expect(all).not.toContain(".env");
    expect(all).not.toContain("id_rsa");
    expect(all).not.toContain("x.pem");
    expect(all).not.toContain(".serverfs-tmp-0123456789abcdef");
    expect(all).not.toContain(".serverfs-disabled");
  });
  test("disable_default_deny releases the built-in set but not the [defaults] extra_deny_globs floor", async () => {
    const all = await allNames("nodeny");
    expect(all).toEqual(expect.arrayContaining([".env", "id_rsa", "x.pem", "secrets", ".hidden"]));
    expect(all).not.toContain("y.bak");
    expect(all).not.toContain(".serverfs-tmp-0123456789abcdef");
  });
  test("NAME/** hides the directory and a whole-path glob hides that one path", async () => {
    expect(await allNames("repo")).not.toContain("secrets");
    expect(await allNames("hid")).toContain("secrets");
    expect(await allNames("hid", "docs")).toEqual(["private.md", "public.md"]);
  });
  test("listing into a hidden, reserved or denied directory is refused with its code", async () => {
    expect(errorCode(await mcp.call("list_directory", { workdir: "repo", path: ".hidden" }))).toBe("HIDDEN_PATH_NOT_ALLOWED");
    expect(errorCode(await mcp.call("list_directory", { workdir: "repo", path: "secrets" }))).toBe("DENIED_PATH");
    expect(errorCode(await mcp.call("list_directory", { workdir: "hid", path: ".serverfs-disabled" }))).toBe("RESERVED_PATH");
  });
});

describe("list_directory: target checks", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ["a regular file is NOT_A_DIRECTORY", { path: "a.txt" }, "NOT_A_DIRECTORY"],
    ["a FIFO is NOT_A_DIRECTORY", { path: "fifo" }, "NOT_A_DIRECTORY"],
    ["a final symlink is SYMLINK_NOT_ALLOWED", { path: "dirlink" }, "SYMLINK_NOT_ALLOWED"],
    ["a symlink in the parent chain is SYMLINK_NOT_ALLOWED", { path: "dirlink/sub" }, "SYMLINK_NOT_ALLOWED"],
    ["a missing directory is PATH_NOT_FOUND", { path: "missing" }, "PATH_NOT_FOUND"],
    ["a file as a parent segment is NOT_A_DIRECTORY", { path: "a.txt/x" }, "NOT_A_DIRECTORY"],
    ["an escaping path is PATH_OUTSIDE_WORKDIR", { path: "c/../../x" }, "PATH_OUTSIDE_WORKDIR"],
    ["an absolute path is PATH_OUTSIDE_WORKDIR", { path: "/etc" }, "PATH_OUTSIDE_WORKDIR"],
  ];
  for (const [rule, args, code] of cases) {
    test(rule, async () => {
      expect(errorCode(await mcp.call("list_directory", { workdir: "repo", ...args }))).toBe(code);
    });
  }
  test("an unknown alias, including a case mismatch, is WORKDIR_NOT_FOUND", async () => {
    expect(errorCode(await mcp.call("list_directory", { workdir: "Repo" }))).toBe("WORKDIR_NOT_FOUND");
  });
});

describe("list_directory: schema", () => {
  test("defaults are declared and capped integers declare the largest safe integer as maximum", async () => {
    const { tools } = await mcp.client.listTools();
    const schema = tools.find((t) => t.name === "list_directory")!.inputSchema as { properties: Record<string, unknown>; required: string[] };
    expect(schema.properties["path"]).toMatchObject({ type: "string", default: "" });
    expect(schema.properties["offset"]).toMatchObject({ type: "integer", minimum: 0, default: 0 });
    expect(schema.properties["limit"]).toMatchObject({ type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER, default: 3 });
    expect(schema.required).toEqual(["workdir"]);
  });
  test("out-of-range, non-integer and unknown parameters are INVALID_ARGUMENT; null is absent", async () => {
    for (const args of [{ offset: -1 }, { limit: 0 }, { limit: 1.5 }, { depth: 1 }, { path: 3 }]) {
      expect(errorCode(await mcp.call("list_directory", { workdir: "repo", ...args }))).toBe("INVALID_ARGUMENT");
    }
    expect(errorCode(await mcp.call("list_directory", { workdir: "repo", path: null, limit: null }))).toBeNull();
  });
});

describe("list_directory audit", () => {
  test("tool_call carries path, returned and has_more", async () => {
    const { record } = await callAudited(mcp, "list_directory", { workdir: "repo", path: "docs" });
    expect(record).toMatchObject({ event: "tool_call", success: true, workdir: "repo", path: "docs", returned: 1, has_more: false });
  });
});
