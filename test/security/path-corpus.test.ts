/**
 * The hostile-path corpus (docs/mcp-tools.md#path-confinement to docs/mcp-tools.md#special-files, docs/mcp-tools.md#read-tools to docs/mcp-tools.md#binary-tools): hundreds of paths, each sent through
 * every path-taking channel — the twelve path tools (upload both as create and as overwrite) and
 * the resource read — in read-write workdirs with binary transfer on. Each path states what it is
 * (a docs/mcp-tools.md#path-confinement refusal, or the kind of object its normalized form names); the tables below turn that
 * into the exact code every channel must answer, following each tool's check order. Around every
 * call: the sibling `outside/` tree is never created in, changed, deleted from, read or listed; a
 * failed mutation leaves its workdir byte-for-byte and stat-for-stat as it was; a successful
 * create makes exactly the one object its normalized path names, inside the workdir.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { CODE_PATTERN, type McpSession, startStdio } from "../helpers/mcp-client.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";
import { type Snapshot, snapshotTree, WatchedTree } from "./tree-snapshot.ts";

const CANARY_CONTENT = "OUTSIDE-CANARY-CONTENT-5d1c";
const CANARY_FILE = "CANARY-NAME-9e2b.txt";
const CANARY_DIR = "CANARY-DIR-9e2b";
const STALE = "v1:0000000000000000";

// ---------------------------------------------------------------------------------------------
// What each channel must answer

const CHANNELS = [
  "list_directory",
  "find_files",
  "search_text",
  "read_text_file",
  "stat_file",
  "download_binary_file",
  "resource",
  "create_text_file",
  "edit_text_file",
  "delete_file",
  "create_directory",
  "delete_directory",
  "upload_new",
  "upload_overwrite",
] as const;
type Channel = (typeof CHANNELS)[number];

const MUTATIONS: ReadonlySet<Channel> = new Set([
  "create_text_file",
  "edit_text_file",
  "delete_file",
  "create_directory",
  "delete_directory",
  "upload_new",
  "upload_overwrite",
]);
const CREATES: Partial<Record<Channel, { type: "file" | "dir"; bytes?: string }>> = {
  create_text_file: { type: "file", bytes: "x" },
  create_directory: { type: "dir" },
  upload_new: { type: "file", bytes: "hi" },
};

/** What a normalized, admitted path names, as far as the tools' check orders care. */
type Kind = "root" | "dir" | "file" | "binary" | "missing" | "missing-parent" | "not-dir-parent" | "symlink-parent" | "symlink" | "special" | "overlong";
/** The docs/mcp-tools.md#path-confinement steps that refuse a path before any traversal, whatever it names. */
type Refusal = "PATH_OUTSIDE_WORKDIR" | "ACCESS_DENIED" | "RESERVED_PATH" | "HIDDEN_PATH_NOT_ALLOWED" | "DENIED_PATH";
const REFUSALS: ReadonlySet<string> = new Set<Refusal>(["PATH_OUTSIDE_WORKDIR", "ACCESS_DENIED", "RESERVED_PATH", "HIDDEN_PATH_NOT_ALLOWED", "DENIED_PATH"]);

const OK = "ok";
const NAF = "NOT_A_FILE";
const NAD = "NOT_A_DIRECTORY";
const PNF = "PATH_NOT_FOUND";
const PARENT = "PARENT_NOT_FOUND";
const EXISTS = "PATH_ALREADY_EXISTS";
const REV = "REVISION_CONFLICT";
const SYM = "SYMLINK_NOT_ALLOWED";
const UFT = "UNSUPPORTED_FILE_TYPE";
const ROOT = "ROOT_MUTATION_NOT_ALLOWED";
const IO = "MUTATION_IO_ERROR";
const AD = "ACCESS_DENIED";
const BIN = "BINARY_FILE";

/**
 * Per kind, per channel (in CHANNELS order). Derived from docs/mcp-tools.md#list_directory to docs/mcp-tools.md#the-file-resource target checks, docs/mcp-tools.md#create_text_file to docs/mcp-tools.md#delete_directory and
 * docs/mcp-tools.md#binary-tools filesystem-phase orders (edits and deletes carry a stale revision, so the revision check is
 * what a well-formed target reaches), docs/mcp-tools.md#os-errors for a name over NAME_MAX (ENAMETOOLONG is "any other").
 */
const BY_KIND: Record<Kind, readonly string[]> = {
  //                list find search read  stat down  res   ctext   edit delfile mkdir  rmdir upnew   upover
  root: [OK, OK, OK, NAF, OK, NAF, NAF, ROOT, ROOT, ROOT, ROOT, ROOT, ROOT, ROOT],
  dir: [OK, OK, OK, NAF, OK, NAF, NAF, EXISTS, NAF, NAF, EXISTS, REV, EXISTS, NAF],
  file: [NAD, NAD, NAD, OK, OK, OK, OK, EXISTS, REV, REV, EXISTS, NAD, EXISTS, REV],
  binary: [NAD, NAD, NAD, BIN, OK, OK, BIN, EXISTS, REV, REV, EXISTS, NAD, EXISTS, REV],
  missing: [PNF, PNF, PNF, PNF, PNF, PNF, PNF, OK, PNF, PNF, OK, PNF, OK, PNF],
  "missing-parent": [PNF, PNF, PNF, PNF, PNF, PNF, PNF, PARENT, PNF, PNF, PARENT, PNF, PARENT, PNF],
  "not-dir-parent": [NAD, NAD, NAD, NAD, NAD, NAD, NAD, NAD, NAD, NAD, NAD, NAD, NAD, NAD],
  "symlink-parent": [SYM, SYM, SYM, SYM, SYM, SYM, SYM, SYM, SYM, SYM, SYM, SYM, SYM, SYM],
  symlink: [SYM, SYM, SYM, SYM, OK, SYM, SYM, EXISTS, SYM, SYM, EXISTS, SYM, EXISTS, SYM],
  special: [NAD, NAD, NAD, UFT, OK, UFT, UFT, EXISTS, UFT, UFT, EXISTS, NAD, EXISTS, UFT],
  overlong: [AD, AD, AD, AD, AD, AD, AD, IO, IO, IO, IO, IO, IO, IO],
};

type Alias = "ws" | "open" | "ro";
type Expectation = Kind | Refusal | "WORKDIR_NOT_FOUND";

interface Case {
  path: string;
  expect: Expectation;
  /** Default "ws". Any other string is an alias no workdir has. */
  workdir?: Alias | (string & {});
}

function expected(c: Case, channel: Channel): string {
  if (c.expect === "WORKDIR_NOT_FOUND") return c.expect;
  // docs/mcp-tools.md#mutation-pipeline step 3 and docs/mcp-tools.md#download_binary_file's order: read-only and binary-disabled answer before path policy.
  if (c.workdir === "ro" && MUTATIONS.has(channel)) return "WORKDIR_READ_ONLY";
  if (c.workdir === "ro" && channel === "download_binary_file") return "BINARY_TRANSFER_DISABLED";
  // docs/mcp-tools.md#the-file-resource: the URI path is percent-decoded as UTF-8 before docs/mcp-tools.md#path-confinement; a lone surrogate's bytes never decode.
  if (channel === "resource" && !c.path.isWellFormed()) return "INVALID_ARGUMENT";
  if (REFUSALS.has(c.expect)) return c.expect;
  return BY_KIND[c.expect as Kind][CHANNELS.indexOf(channel)]!;
}

/** docs/mcp-tools.md#path-confinement step 2 for a path that passed step 1: the normalized form results must echo. */
function normalized(path: string): string {
  const kept: string[] = [];
  for (const seg of path.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") kept.pop();
    else kept.push(seg);
  }
  return kept.join("/");
}

// ---------------------------------------------------------------------------------------------
// The layout

const dir: TempDir = tempDir("serverfs-corpus-");
const WS = join(dir.path, "ws");
const OPEN = join(dir.path, "open");
const RO = join(dir.path, "ro");
const OUTSIDE = join(dir.path, "outside");
const ROOTS: Record<Alias, string> = { ws: WS, open: OPEN, ro: RO };

/** Directories at every depth; each holds the same set of symlinks. */
const LEVELS = ["", "chain/", "chain/p1/", "chain/p1/p2/", "chain/p1/p2/p3/"];

interface LinkSpec {
  name: string;
  /** The target, given the directory the link lives in. */
  target(linkDir: string): string;
  /** A name that exists (or would) in the target, to walk through the link. */
  through: string;
}

const LINKS: LinkSpec[] = [
  { name: "s-out-abs", target: () => OUTSIDE, through: CANARY_FILE },
  { name: "s-out-rel", target: (d) => relative(d, OUTSIDE), through: CANARY_FILE },
  { name: "s-out-file", target: () => join(OUTSIDE, CANARY_FILE), through: "x" },
  { name: "s-in", target: (d) => relative(d, join(WS, "dir")), through: "inner.txt" },
  { name: "s-in-file", target: (d) => relative(d, join(WS, "file.txt")), through: "x" },
  { name: "s-root", target: () => "/", through: "etc/passwd" },
  { name: "s-dangling", target: () => "does-not-exist", through: "x" },
  { name: "s-loop", target: () => "s-loop", through: "x" },
];

let socketListener: { stop(closeActive?: boolean): void } | null = null;

function buildLayout(): void {
  dir.file("outside/file.txt", CANARY_CONTENT);
  dir.file(`outside/${CANARY_FILE}`, `${CANARY_CONTENT}\n`);
  dir.file(`outside/${CANARY_DIR}/nested.txt`, `${CANARY_CONTENT}\n`);
  dir.file("outside/dir/inner.txt", `${CANARY_CONTENT}\n`);

  dir.file("ws/file.txt", "hello\n");
  dir.file("ws/binary.bin", "a\0b\n");
  dir.file("ws/café.txt", "nfc\n");
  dir.file("ws/dir/inner.txt", "inner\n");
  dir.file("ws/dir/sub/deep.txt", "deep\n");
  dir.dir("ws/empty");
  dir.file("ws/chain/p1/p2/p3/leaf.txt", "leaf\n");
  dir.file("ws/.hidden", "hidden\n");
  dir.file("ws/.env", "SECRET=1\n");
  dir.file("ws/.serverfs-tmp-0123456789abcdef", "temp\n");
  dir.file("ws/.serverfs-disabled", "");
  dir.file("ws/id_rsa", "key\n");
  dir.file("ws/key.pem", "pem\n");
  dir.file("ws/secret.txt", "secret\n");
  dir.file("ws/private/x.txt", "private\n");
  dir.file("ws/build/out/x.log", "log\n");
  for (const level of LEVELS) {
    const linkDir = join(WS, level);
    for (const link of LINKS) symlinkSync(link.target(linkDir), join(linkDir, link.name));
  }
  expect(Bun.spawnSync(["mkfifo", join(WS, "fifo")]).exitCode).toBe(0);
  // A device where the kernel allows creating one; otherwise another special file of the same rules.
  if (Bun.spawnSync(["mknod", join(WS, "null"), "c", "1", "3"]).exitCode !== 0) {
    expect(Bun.spawnSync(["mkfifo", join(WS, "null")]).exitCode).toBe(0);
  }
  socketListener = Bun.listen({ unix: join(WS, "sock"), socket: { data() {} } });

  dir.file("open/.hidden.txt", "hidden ok\n");
  dir.file("open/.config/app.txt", "app\n");
  dir.file("open/.git/HEAD", "ref: main\n");
  dir.file("open/.env", "SECRET=1\n");
  dir.file("open/.ssh/config", "Host x\n");
  dir.file("open/.serverfs-tmp-aaaaaaaaaaaaaaaa", "temp\n");
  dir.file("open/plain.txt", "plain\n");

  dir.file("ro/file.txt", "read only\n");
  dir.dir("ro/dir");
}

// ---------------------------------------------------------------------------------------------
// The corpus, one family per rule

const many = (n: number, s: string) => s.repeat(n);
const cases = (expect: Expectation, paths: string[], workdir?: Case["workdir"]): Case[] =>
  paths.map((path) => (workdir === undefined ? { path, expect } : { path, expect, workdir }));

interface Family {
  rule: string;
  cases: Case[];
}

const FAMILIES: Family[] = [
  {
    rule: "path confinement step 1: a path starting with / is PATH_OUTSIDE_WORKDIR, never echoed",
    cases: cases("PATH_OUTSIDE_WORKDIR", [
      "/",
      "//",
      "///",
      "/etc/passwd",
      "/etc/shadow",
      "/proc/self/environ",
      "/proc/self/fd/0",
      "/dev/null",
      "/tmp",
      OUTSIDE,
      `${OUTSIDE}/${CANARY_FILE}`,
      `${OUTSIDE}/`,
      WS,
      `${WS}/file.txt`,
      `${WS}/../outside/${CANARY_FILE}`,
      "/./file.txt",
      "/../file.txt",
      "/..",
      "/\0",
      "/.env",
      "/.serverfs-tmp-x",
      "/ ",
      "/file.txt",
      "//server/share",
      "/\\",
      "/~",
    ]),
  },
  {
    rule: "path confinement step 1: a path starting with ~ is PATH_OUTSIDE_WORKDIR",
    cases: cases("PATH_OUTSIDE_WORKDIR", [
      "~",
      "~/",
      "~/.ssh/id_rsa",
      "~root",
      "~root/.bashrc",
      "~+",
      "~-",
      "~/../../etc/passwd",
      "~\0",
      "~file.txt",
      "~/file.txt",
      "~.env",
      "~~",
      "~/..",
    ]),
  },
  {
    rule: "path confinement step 2: a .. with nothing left to remove is PATH_OUTSIDE_WORKDIR, before NUL and policy",
    cases: cases("PATH_OUTSIDE_WORKDIR", [
      "..",
      "../",
      "../..",
      "../../..",
      "../outside",
      `../outside/${CANARY_FILE}`,
      "../ws/file.txt",
      "./..",
      "./../",
      ".//..",
      "dir/../..",
      "dir/sub/../../..",
      "dir/./../../outside",
      "a/b/c/../../../..",
      "file.txt/../..",
      "x/../../file.txt",
      "../.env",
      "../.serverfs-tmp-x",
      "../\0",
      "dir/..//../",
      "chain/p1/p2/p3/../../../../../outside",
      `${many(50, "a/")}${many(51, "../")}`,
      "s-out-abs/../..",
      `s-out-abs/../../outside/${CANARY_FILE}`,
      "dir/inner.txt/../../../x",
      "../../../../../../../../etc/passwd",
      "..//..//..",
      "./././..",
      "dir/../dir/../..",
      ".../../..",
      "\0/../..",
      ".env/../..",
      "id_rsa/../../x",
      "../ws",
      "..\\/../..",
    ]),
  },
  {
    rule: "path confinement step 2: in-bounds . and .. are resolved lexically, never by following anything",
    cases: [
      ...cases("root", [
        "",
        ".",
        "./",
        "./.",
        ".//",
        "dir/..",
        "a/..",
        "a/b/../..",
        "file.txt/..",
        "nope/nope/../..",
        `${many(3000, "a/")}${many(3000, "../")}`,
      ]),
      ...cases("dir", ["dir/sub/..", ".env/../dir", "dir/", "./dir/./", "s-out-abs/../dir"]),
      ...cases("file", [
        "nonexistent/../file.txt",
        "dir/../file.txt",
        "dir/./inner.txt",
        "dir//inner.txt",
        "./dir/inner.txt/",
        "file.txt/",
        "file.txt/.",
        ".hidden/../file.txt",
        ".serverfs-tmp-x/../file.txt",
        "id_rsa/../dir/inner.txt",
        `${many(2000, "./")}file.txt`,
        `${many(3000, "a/")}${many(3000, "../")}file.txt`,
        "dir/sub/deep.txt/../../inner.txt",
        "fifo/../file.txt",
      ]),
    ],
  },
  {
    rule: "path confinement step 3: a NUL anywhere in the path is ACCESS_DENIED, before reserved, hidden and deny",
    cases: cases("ACCESS_DENIED", [
      "\0",
      "file.txt\0",
      "file.txt\0.png",
      "\0file.txt",
      "dir/\0",
      "dir/\0/inner.txt",
      "a\0b/c",
      ".env\0",
      "\0/.env",
      ".serverfs-tmp-\0",
      "id_rsa\0",
      "x\0/../file.txt",
      "s-out-abs/\0",
      "fifo\0",
      "\0\0\0",
      "nope/\0/..",
      // not a .. segment: the NUL makes it an ordinary one
      "..\0",
      "..\0/..",
    ]),
  },
  {
    rule: "path confinement step 3: an unpaired surrogate, which no UTF-8 filename can hold, is ACCESS_DENIED like NUL",
    cases: [
      ...cases("ACCESS_DENIED", [
        "a\uD800b",
        "\uDC00",
        "dir/\uD83D",
        "\uDE00\uD83D",
        "\uD800/../file.txt",
        ".env\uDFFF",
        ".serverfs-tmp-\uD800",
        "s-out-abs/\uDBFF",
        "nope/\uD800/x",
      ]),
      ...cases("PATH_OUTSIDE_WORKDIR", ["../\uD800", "/\uD800", "~\uDC00"]),
    ],
  },
  {
    rule: "path confinement step 2: a backslash is an ordinary filename character",
    cases: [
      ...cases("missing", [
        "dir\\inner.txt",
        "\\etc\\passwd",
        "\\..\\..\\x",
        "C:\\Windows\\System32",
        "\\\\server\\share",
        "\\",
        "dir\\",
        "dir/\\",
        "dir\\..\\file.txt",
        "a\\id_rsa",
        "\\0",
        "file.txt\\",
        "s-out-abs\\x",
      ]),
      ...cases("missing-parent", ["C:/Windows", "dir\\sub/deep.txt", "\\/x"]),
      ...cases("HIDDEN_PATH_NOT_ALLOWED", ["..\\..\\etc\\passwd", `..\\outside\\${CANARY_FILE}`, ".\\x", "..\\../x"]),
      ...cases("DENIED_PATH", ["\\.env", "x\\.pem", "dir/y\\.key"]),
    ],
  },
  {
    rule: "path confinement: percent signs and other encodings are literal characters for the tools",
    cases: [
      ...cases("missing", ["%2e%2e%2f%2e%2e%2fetc", "%00", "%2F", "dir%2finner.txt", "%252e%252e", "&#46;&#46;", "\\u002e\\u002e"]),
      ...cases("missing-parent", ["%2e%2e/x", "%7e/x"]),
      ...cases("HIDDEN_PATH_NOT_ALLOWED", ["..%2f..%2fetc%2fpasswd", ".%2e"]),
    ],
  },
  {
    rule: "path confinement: no Unicode normalization or case folding; look-alikes are other names",
    cases: [
      ...cases("missing", [
        "\uFF0E\uFF0E",
        "\u2025",
        "\u2024\u2024",
        "\uFE52\uFE52",
        "\u2215etc\u2215passwd",
        "\uFF0Fetc\uFF0Fpasswd",
        "\u29F8etc",
        "\u2044etc",
        "\uFF3C",
        "\u200B..",
        "\u202E..",
        "\uFF5E",
        "\u02DC",
        "\uFF0Eenv",
        "\u200Bid_rsa",
        "ID_RSA",
        "Id_Rsa",
        "key.PEM",
        "SECRET.txt",
        "FILE.TXT",
        "file.txt ",
        " file.txt",
        "file.txt\u200B",
        "file\u2024txt",
        "cafe\u0301.txt",
        "\u0131d_rsa",
        "dir\u2215inner.txt",
        "\uFEFFfile.txt",
        "fi\u00ADle.txt",
        "\uD83D\uDE00",
        "\u212Aey.pem\u200B",
        "tab\tname",
        "new\nline",
        "cr\rname",
        "del\u007F",
        "esc\u001B[31m",
      ]),
      ...cases("missing-parent", ["\uFF0E\uFF0E/\uFF0E\uFF0E/etc", "\u200B../\u200B..", "\uFF0Essh/config", "\uFF5E/x"]),
      ...cases("file", ["café.txt"]),
      ...cases("HIDDEN_PATH_NOT_ALLOWED", ["..\u2215..\u2215etc", "..\u200B", ".\u200B.", "\uFF5E/.ssh"]),
      ...cases("DENIED_PATH", ["KEY.pem", "\uFF0E.env"]),
    ],
  },
  {
    rule: "reserved names are RESERVED_PATH on every channel, before hidden and deny",
    cases: [
      ...cases("RESERVED_PATH", [
        ".serverfs-tmp-0123456789abcdef",
        ".serverfs-tmp-",
        ".serverfs-tmp-x/y",
        "dir/.serverfs-tmp-abc",
        ".serverfs-disabled",
        "dir/.serverfs-disabled",
        ".serverfs-disabled/x",
        ".hidden/.serverfs-tmp-1",
        ".env/.serverfs-disabled",
        "id_rsa/.serverfs-tmp-q",
        "nope/.serverfs-tmp-q",
        "s-out-abs/.serverfs-tmp-q",
        ".serverfs-tmp-\u200B",
        "./.serverfs-tmp-9",
        "fifo/.serverfs-disabled",
      ]),
      ...cases("HIDDEN_PATH_NOT_ALLOWED", [".serverfs-tmp", ".serverfs-disabled2", ".serverfs-Tmp-x", ".serverfs"]),
      ...cases("missing", ["serverfs-tmp-x", "x.serverfs-tmp-y"]),
    ],
  },
  {
    rule: "hidden segments are HIDDEN_PATH_NOT_ALLOWED on every channel, before deny and traversal",
    cases: cases("HIDDEN_PATH_NOT_ALLOWED", [
      ".hidden",
      ".hidden/x",
      "dir/.x",
      ".git",
      ".git/config",
      "...",
      "... ",
      ". ",
      ".env",
      ".ssh/id_rsa",
      ".env.local",
      "x/.pem",
      "dir/sub/.deep",
      ".hidden/../.hidden",
      "nope/.x",
      "s-out-abs/.x",
      "file.txt/.x",
      "fifo/.x",
    ]),
  },
  {
    rule: "the built-in deny set and extra_deny_globs are DENIED_PATH, before traversal",
    cases: [
      ...cases("DENIED_PATH", [
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        "id_ed25519_sk",
        "id_ecdsa_sk",
        "id_rsa.pub",
        "id_rsa\u200B",
        "id_work",
        "dir/id_rsa",
        "id_rsa/x",
        "key.pem",
        "x.key",
        "dir/sub/cert.pem",
        "a.pem/b",
        "prod.env",
        "secret.txt",
        "secret",
        "dir/secret-notes",
        "private",
        "private/x.txt",
        "dir/private/y",
        "build/out/x.log",
        "build/out/sub/y.log",
        "nope/id_rsa",
        `s-out-abs/${CANARY_DIR}/key.pem`,
        "fifo/x.key",
      ]),
      ...cases("missing", ["my_id_rsa", "id-rsa", "pem", "x.pem.bak", "x.keys", "build/x.log", "build/out/x.txt", "privates"]),
    ],
  },
  {
    rule: "with allow_hidden = true, hidden names are released but reserved and deny rules still apply",
    cases: [
      ...cases("file", [".hidden.txt", ".config/app.txt", ".git/HEAD", "./.hidden.txt"], "open"),
      ...cases("dir", [".config", ".git"], "open"),
      ...cases("missing", ["...", ".new-hidden", ". ", ".serverfs-tmp", ".serverfs-disabled2", ".\u200B"], "open"),
      ...cases("missing-parent", [".. /x", ".nope/x"], "open"),
      ...cases(
        "DENIED_PATH",
        [".env", ".env.local", ".env.production/x", ".config/.env", ".ssh", ".ssh/config", ".aws/credentials", ".gnupg", ".kube/config", ".key"],
        "open",
      ),
      ...cases(
        "RESERVED_PATH",
        [".serverfs-tmp-aaaaaaaaaaaaaaaa", ".serverfs-tmp-", ".serverfs-disabled", ".config/.serverfs-tmp-x", ".env/.serverfs-disabled"],
        "open",
      ),
    ],
  },
  {
    rule: "race-safe traversal, special files, read tools to binary tools target checks: directories where files are expected, files as parents, special files",
    cases: [
      ...cases("dir", ["dir", "empty", "dir/sub", "chain", "chain/p1/p2/p3"]),
      ...cases("file", ["file.txt", "dir/inner.txt", "dir/sub/deep.txt", "chain/p1/p2/p3/leaf.txt"]),
      ...cases("binary", ["binary.bin", "./binary.bin"]),
      ...cases("special", ["fifo", "sock", "null", "./fifo/"]),
      ...cases("not-dir-parent", [
        "file.txt/x",
        "file.txt/x/y",
        "dir/inner.txt/z",
        "binary.bin/x",
        "fifo/x",
        "sock/x",
        "null/x",
        "dir/sub/deep.txt/more",
        "chain/p1/p2/p3/leaf.txt/x",
      ]),
      ...cases("missing", ["nope", "dir/nope", "empty/nope", "chain/p1/p2/p3/nope"]),
      ...cases("missing-parent", ["nope/x", "nope/x/y", "dir/nope/x", "empty/nope/x"]),
    ],
  },
  {
    rule: "a symlink at any position: a parent is SYMLINK_NOT_ALLOWED, a final one is reported but never followed",
    cases: LEVELS.flatMap((level) =>
      LINKS.flatMap((link) => [
        { path: `${level}${link.name}`, expect: "symlink" as const },
        { path: `${level}${link.name}/${link.through}`, expect: "symlink-parent" as const },
        { path: `${level}${link.name}/${CANARY_DIR}/nested.txt`, expect: "symlink-parent" as const },
        { path: `${level}${link.name}/..`, expect: level === "" ? ("root" as const) : ("dir" as const) },
      ]),
    ),
  },
  {
    rule: "a name longer than NAME_MAX is ACCESS_DENIED on the read side, MUTATION_IO_ERROR on the mutation side",
    cases: [
      ...cases("overlong", [many(256, "x"), many(128, "é"), many(4096, "x"), `dir/${many(300, "y")}`, `${many(300, "z")}/x`, `dir/${many(64, "\u{1F600}")}`]),
      ...cases("missing", [many(255, "x"), many(127, "é"), many(63, "\u{1F600}")]),
      ...cases("missing-parent", [`${many(2000, "a/")}x`]),
    ],
  },
  {
    rule: "the mutation pipeline step 3, download_binary_file: a read-only workdir answers WORKDIR_READ_ONLY to every mutation, even for refused paths",
    cases: [
      ...cases("PATH_OUTSIDE_WORKDIR", ["/etc/passwd", "~", "../x", `${RO}/file.txt`], "ro"),
      ...cases("ACCESS_DENIED", ["file.txt\0"], "ro"),
      ...cases("HIDDEN_PATH_NOT_ALLOWED", [".hidden"], "ro"),
      ...cases("DENIED_PATH", ["id_rsa"], "ro"),
      ...cases("RESERVED_PATH", [".serverfs-tmp-1"], "ro"),
      ...cases("file", ["file.txt"], "ro"),
      ...cases("dir", ["dir"], "ro"),
      ...cases("root", [""], "ro"),
      ...cases("missing-parent", ["nope/x"], "ro"),
    ],
  },
  {
    rule: "an unknown alias (a case mismatch, a look-alike) is WORKDIR_NOT_FOUND before anything else",
    cases: ["WS", "Ws", "ws2", "w", "open ", " ro", "", "w\u0455", "ws\u200B", "RO"].map((workdir) => ({
      path: "../file.txt",
      expect: "WORKDIR_NOT_FOUND" as const,
      workdir,
    })),
  },
];

// ---------------------------------------------------------------------------------------------
// Calling one channel and checking what came back

let mcp: McpSession;
let outside: WatchedTree;

interface Outcome {
  /** The error code, or null for a success. */
  code: string | null;
  /** The error text (`CODE: message`), or the JSON of the result. */
  text: string;
  structured: Record<string, unknown>;
  /** Resource failures only: the JSON-RPC error code. */
  rpcCode?: number;
}

function toolArgs(channel: Exclude<Channel, "resource">, workdir: string, path: string): [string, Record<string, unknown>] {
  switch (channel) {
    case "find_files":
      return [channel, { workdir, path, pattern: "*" }];
    case "search_text":
      return [channel, { workdir, path, query: CANARY_CONTENT }];
    case "create_text_file":
      return [channel, { workdir, path, content: "x" }];
    case "edit_text_file":
      return [channel, { workdir, path, expected_revision: STALE, edits: [{ old_text: "hello", new_text: "bye" }] }];
    case "delete_file":
    case "delete_directory":
      return [channel, { workdir, path, expected_revision: STALE }];
    case "upload_new":
      return ["upload_binary_file", { workdir, path, data_base64: "aGk=" }];
    case "upload_overwrite":
      return ["upload_binary_file", { workdir, path, data_base64: "aGk=", overwrite: true, expected_revision: STALE }];
    default:
      return [channel, { workdir, path }];
  }
}

/**
 * The URI path that percent-decodes to exactly `path`; a lone surrogate (which has no UTF-8 form)
 * goes as its generalized UTF-8 bytes, as a hostile client would send it.
 */
function uriPath(path: string): string {
  if (path.isWellFormed()) return encodeURIComponent(path);
  const wtf8 = (unit: number) => [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)];
  return [...path]
    .map((ch) =>
      ch.isWellFormed()
        ? encodeURIComponent(ch)
        : wtf8(ch.charCodeAt(0))
            .map((b) => `%${b.toString(16).toUpperCase()}`)
            .join(""),
    )
    .join("");
}

async function readResource(uri: string): Promise<Outcome> {
  try {
    const r = await mcp.client.readResource({ uri });
    return { code: null, text: JSON.stringify(r), structured: r as unknown as Record<string, unknown> };
  } catch (e) {
    const err = e as { code: number; message: string };
    // The SDK client prefixes "MCP error <code>: " to the wire message.
    const text = err.message.replace(/^MCP error -?\d+: /, "");
    return { code: CODE_PATTERN.exec(text)?.[1] ?? "MALFORMED_ERROR", text, structured: {}, rpcCode: err.code };
  }
}

async function invoke(channel: Channel, workdir: string, path: string): Promise<Outcome> {
  if (channel === "resource") return readResource(`serverfs://${workdir}/${uriPath(path)}`);
  const [name, args] = toolArgs(channel, workdir, path);
  const r: CallToolResult = await mcp.call(name, args);
  if (r.isError) {
    const text = (r.content[0] as { text: string }).text;
    return { code: CODE_PATTERN.exec(text)?.[1] ?? "MALFORMED_ERROR", text, structured: {} };
  }
  return { code: null, text: JSON.stringify(r), structured: r.structuredContent as Record<string, unknown> };
}

/** docs/mcp-tools.md#results-and-errors: the message never carries a host path or outside content, and echoes a path only normalized. */
function errorProblems(c: Case, workdir: string, o: Outcome): string[] {
  const problems: string[] = [];
  if (!/^[A-Z][A-Z0-9_]{2,}: \S/.test(o.text)) problems.push(`malformed error text ${JSON.stringify(o.text)}`);
  if (o.text.includes(dir.path)) problems.push("error text holds the temp directory's absolute path");
  const message = o.text.slice(o.text.indexOf(": ") + 2);
  const prefix = `${workdir}:`;
  const beforeNormalizing = c.expect === "PATH_OUTSIDE_WORKDIR" || c.expect === "ACCESS_DENIED" || c.expect === "WORKDIR_NOT_FOUND";
  if (beforeNormalizing) {
    if (message.includes(prefix) || (c.path.length > 2 && message.includes(c.path))) problems.push(`echoes a path refused before normalizing: ${message}`);
  } else if (message.includes(prefix) && !message.startsWith(`${prefix}${normalized(c.path)} `)) {
    problems.push(`echoes a path other than its normalized form: ${JSON.stringify(message)}`);
  }
  if (o.rpcCode !== undefined) {
    const rpc = o.code === "WORKDIR_NOT_FOUND" || o.code === "PATH_NOT_FOUND" ? -32002 : -32603;
    if (o.rpcCode !== rpc) problems.push(`JSON-RPC code ${o.rpcCode}, expected ${rpc}`);
  }
  return problems;
}

const STAT_TYPE: Partial<Record<Kind, string>> = { root: "directory", dir: "directory", file: "file", binary: "file", symlink: "symlink", special: "other" };

/** What a success must show: the normalized path, the object's real type and bytes, nothing from outside. */
function successProblems(c: Case, channel: Channel, root: string, o: Outcome): string[] {
  const problems: string[] = [];
  const norm = normalized(c.path);
  const s = o.structured;
  if (!c.path.includes("CANARY") && o.text.includes("CANARY")) problems.push("a result names something outside");
  if ("path" in s && s["path"] !== norm) problems.push(`path ${JSON.stringify(s["path"])}, expected ${JSON.stringify(norm)}`);
  const matches = (s["matches"] as { path: string }[] | undefined) ?? [];
  for (const m of matches) if (norm !== "" && !m.path.startsWith(`${norm}/`)) problems.push(`match ${m.path} outside ${norm}`);
  if (channel === "search_text" && matches.length > 0) problems.push("search found outside content");
  const target = join(root, norm);
  if (channel === "stat_file" && s["type"] !== STAT_TYPE[c.expect as Kind]) problems.push(`type ${String(s["type"])}`);
  if (channel === "read_text_file" && s["content"] !== readFileSync(target, "utf8")) problems.push("content differs from the file");
  if (channel === "download_binary_file" && s["sha256"] !== new Bun.CryptoHasher("sha256").update(readFileSync(target)).digest("hex")) {
    problems.push("sha256 differs from the file");
  }
  if (channel === "resource") {
    const text = (s["contents"] as { text: string }[] | undefined)?.[0]?.text;
    if (text !== readFileSync(target, "utf8")) problems.push("resource text differs from the file");
  }
  return problems;
}

function diff(before: Snapshot, after: Snapshot): string[] {
  const out: string[] = [];
  for (const k of Object.keys(before)) if (!(k in after)) out.push(`removed ${JSON.stringify(k)}`);
  for (const k of Object.keys(after)) {
    if (!(k in before)) out.push(`created ${JSON.stringify(k)}`);
    else if (before[k] !== after[k]) out.push(`changed ${JSON.stringify(k)}: ${before[k]} -> ${after[k]}`);
  }
  return out;
}

/** A temp file of the exact format with no writer holding it: a create in its directory removes it (docs/reliability.md). */
const STALE_TEMP = /^\.serverfs-tmp-[0-9a-f]{16}$/;

/**
 * A successful create must have made exactly its normalized path (only the parent directory's
 * times change with it, and the stale temp files of that directory may go, as documented); the
 * object is then removed and those fixtures put back, so the next call sees the same workdir.
 */
function createProblems(channel: Channel, root: string, norm: string, before: Snapshot): string[] {
  const made = CREATES[channel]!;
  const after = snapshotTree(root);
  const parent = dirname(norm) === "." ? "" : dirname(norm);
  const staleRemoved = (d: string) => {
    const m = /^removed "(.*)"$/.exec(d);
    return m !== null && dirname(m[1]!) === (parent === "" ? "." : parent) && STALE_TEMP.test(basename(m[1]!));
  };
  for (const d of diff(before, after).filter(staleRemoved)) writeFileSync(join(root, /^removed "(.*)"$/.exec(d)![1]!), "temp\n");
  const unexpected = diff(before, after).filter(
    (d) => d !== `created ${JSON.stringify(norm)}` && !d.startsWith(`changed ${JSON.stringify(parent)}:`) && !staleRemoved(d),
  );
  const problems = unexpected.map((d) => `create ${d}`);
  const line = after[norm];
  if (line === undefined) problems.push(`nothing created at ${JSON.stringify(norm)}`);
  else if (!line.startsWith(`${made.type} `)) problems.push(`created a ${line.split(" ")[0]}, expected a ${made.type}`);
  else if (made.bytes !== undefined && readFileSync(join(root, norm), "utf8") !== made.bytes) problems.push("created file holds other bytes");
  rmSync(join(root, norm), { recursive: true, force: true });
  return problems;
}

/** Runs one path through every channel; returns every deviation from the contract. */
async function runCase(c: Case): Promise<string[]> {
  const workdir = c.workdir ?? "ws";
  const root = ROOTS[workdir as Alias] ?? WS;
  const problems: string[] = [];
  for (const channel of CHANNELS) {
    const want = expected(c, channel);
    const before = MUTATIONS.has(channel) ? snapshotTree(root) : null;
    const o = await invoke(channel, workdir, c.path);
    const got = o.code ?? OK;
    const found = got !== want ? [`expected ${want}, got ${got}${o.code ? ` (${o.text})` : ""}`] : [];
    if (o.text.includes(CANARY_CONTENT)) found.push("outside content leaked");
    found.push(...(o.code === null ? successProblems(c, channel, root, o) : errorProblems(c, workdir, o)));
    if (before && o.code === null && CREATES[channel]) found.push(...createProblems(channel, root, normalized(c.path), before));
    else if (before) found.push(...diff(before, snapshotTree(root)).map((d) => `workdir ${d}`));
    for (const f of found) problems.push(`${workdir}:${JSON.stringify(c.path).slice(0, 120)} ${channel}: ${f}`);
  }
  const touched = diff(outside.baseline, outside.current());
  for (const t of touched) problems.push(`${JSON.stringify(c.path).slice(0, 120)}: outside ${t}`);
  return problems;
}

beforeAll(async () => {
  buildLayout();
  mkdirSync(join(dir.path, "cfg"));
  const config = writeConfig(join(dir.path, "cfg"), {
    workdirs: [
      {
        slot: 1,
        alias: "ws",
        path: WS,
        read_only: false,
        binary_transfer_enabled: true,
        extra_deny_globs: ["secret*", "private/**", "build/out/*.log"],
      },
      { slot: 2, alias: "open", path: OPEN, read_only: false, binary_transfer_enabled: true, allow_hidden: true },
      { slot: 3, alias: "ro", path: RO },
    ],
  });
  mcp = await startStdio(config);
  outside = new WatchedTree(OUTSIDE);
});

afterAll(async () => {
  await mcp?.close();
  socketListener?.stop(true);
  dir.remove();
});

describe("the corpus", () => {
  test("holds at least 300 distinct paths, each with an expectation for all 14 channels", () => {
    const paths = new Set(FAMILIES.flatMap((f) => f.cases.map((c) => c.path)));
    expect(paths.size).toBeGreaterThanOrEqual(300);
    for (const f of FAMILIES) for (const c of f.cases) for (const ch of CHANNELS) expect(expected(c, ch)).toBeString();
  });
  test("the outside tree is watched: a plain read of it is detected", () => {
    readFileSync(join(OUTSIDE, CANARY_FILE));
    expect(diff(outside.baseline, outside.current())).toEqual([expect.stringContaining(`changed ${JSON.stringify(CANARY_FILE)}`)]);
    expect(diff(outside.baseline, outside.current())).toEqual([]);
  });
});

for (const family of FAMILIES) {
  describe(family.rule, () => {
    test(`${family.cases.length} paths × ${CHANNELS.length} channels: exact codes, no side effects`, async () => {
      const problems: string[] = [];
      for (const c of family.cases) problems.push(...(await runCase(c)));
      expect(problems).toEqual([]);
    }, 120_000);
  });
}

/**
 * Raw resource URIs whose hostility is in the encoding itself, which only the resource decodes:
 * decoded exactly once, strictly as UTF-8 (overlong forms and encoded surrogates never become `.`
 * or `/`), then through docs/mcp-tools.md#path-confinement like any path. `[uri, code, file read on success]`.
 */
const RESOURCE_URIS: [string, string, string?][] = [
  [`serverfs://ws/../outside/${CANARY_FILE}`, "PATH_OUTSIDE_WORKDIR"],
  [`serverfs://ws/%2e%2e/outside/${CANARY_FILE}`, "PATH_OUTSIDE_WORKDIR"],
  [`serverfs://ws/%2E%2E%2Foutside%2F${CANARY_FILE}`, "PATH_OUTSIDE_WORKDIR"],
  ["serverfs://ws/.%2e/outside", "PATH_OUTSIDE_WORKDIR"],
  ["serverfs://ws/dir%2F..%2F..%2Foutside", "PATH_OUTSIDE_WORKDIR"],
  ["serverfs://ws//etc/passwd", "PATH_OUTSIDE_WORKDIR"],
  ["serverfs://ws/%2Fetc%2Fpasswd", "PATH_OUTSIDE_WORKDIR"],
  [`serverfs://ws/${encodeURIComponent(OUTSIDE)}`, "PATH_OUTSIDE_WORKDIR"],
  ["serverfs://ws/~/x", "PATH_OUTSIDE_WORKDIR"],
  ["serverfs://ws/%7E/.ssh", "PATH_OUTSIDE_WORKDIR"],
  ["serverfs://ws/file.txt%00", "ACCESS_DENIED"],
  ["serverfs://ws/%00../../x", "ACCESS_DENIED"],
  ["serverfs://ws/%C0%AE%C0%AE/outside", "INVALID_ARGUMENT"],
  ["serverfs://ws/%E0%80%AE%E0%80%AE/outside", "INVALID_ARGUMENT"],
  ["serverfs://ws/dir%C0%AF..%C0%AF..%C0%AFoutside", "INVALID_ARGUMENT"],
  ["serverfs://ws/%ED%A0%80", "INVALID_ARGUMENT"],
  ["serverfs://ws/%FF", "INVALID_ARGUMENT"],
  ["serverfs://ws/%252e%252e/x", "PATH_NOT_FOUND"],
  ["serverfs://ws/%25", "PATH_NOT_FOUND"],
  ["serverfs://ws/%", "PATH_NOT_FOUND"],
  ["serverfs://ws/%2", "PATH_NOT_FOUND"],
  ["serverfs://ws/%zz", "PATH_NOT_FOUND"],
  ["serverfs://ws/file.txt?x=1", "PATH_NOT_FOUND"],
  ["serverfs://ws/file.txt#frag", "PATH_NOT_FOUND"],
  ["serverfs://ws/cafe%CC%81.txt", "PATH_NOT_FOUND"],
  [`serverfs://ws/s-out-abs/${CANARY_FILE}`, "SYMLINK_NOT_ALLOWED"],
  [`serverfs://ws/%73-out-abs%2F${CANARY_FILE}`, "SYMLINK_NOT_ALLOWED"],
  [`serverfs://ws/chain/p1/s-out-rel/${CANARY_FILE}`, "SYMLINK_NOT_ALLOWED"],
  ["serverfs://ws/s-out-file", "SYMLINK_NOT_ALLOWED"],
  ["serverfs://ws/.serverfs-tmp-0123456789abcdef", "RESERVED_PATH"],
  ["serverfs://ws/%2Eserverfs-disabled", "RESERVED_PATH"],
  ["serverfs://ws/%2Ehidden", "HIDDEN_PATH_NOT_ALLOWED"],
  ["serverfs://ws/%2eenv", "HIDDEN_PATH_NOT_ALLOWED"],
  ["serverfs://ws/id%5Frsa", "DENIED_PATH"],
  ["serverfs://ws/key%2Epem", "DENIED_PATH"],
  ["serverfs://ws", "NOT_A_FILE"],
  ["serverfs://ws/", "NOT_A_FILE"],
  ["serverfs://ws/dir", "NOT_A_FILE"],
  ["serverfs://ws/fifo", "UNSUPPORTED_FILE_TYPE"],
  ["serverfs://ws/file.txt", OK, "file.txt"],
  ["serverfs://ws/dir%2Finner.txt", OK, "dir/inner.txt"],
  ["serverfs://ws/dir/../file.txt", OK, "file.txt"],
  ["serverfs://ws/caf%C3%A9.txt", OK, "café.txt"],
  ["serverfs://WS/file.txt", "WORKDIR_NOT_FOUND"],
  ["serverfs://ws%2Ffile.txt", "WORKDIR_NOT_FOUND"],
  ["serverfs:///file.txt", "WORKDIR_NOT_FOUND"],
  ["serverfs://%77s/file.txt", "WORKDIR_NOT_FOUND"],
];

describe("resource URIs: percent-decoded once, strictly, then path confinement", () => {
  test(`${RESOURCE_URIS.length} raw URIs: exact codes, JSON-RPC codes, nothing outside touched`, async () => {
    const problems: string[] = [];
    for (const [uri, want, file] of RESOURCE_URIS) {
      const o = await readResource(uri);
      const found: string[] = [];
      if ((o.code ?? OK) !== want) found.push(`expected ${want}, got ${o.code ?? OK} ${o.text}`);
      if (o.text.includes(CANARY_CONTENT) || o.text.includes(dir.path)) found.push("leaks outside content or a host path");
      if (o.code !== null) {
        const rpc = o.code === "WORKDIR_NOT_FOUND" || o.code === "PATH_NOT_FOUND" ? -32002 : -32603;
        if (o.rpcCode !== rpc || !/^[A-Z][A-Z0-9_]{2,}: \S/.test(o.text)) found.push(`malformed failure ${o.rpcCode} ${o.text}`);
      } else if ((o.structured["contents"] as { text: string }[])[0]?.text !== readFileSync(join(WS, file ?? ""), "utf8")) {
        found.push("text differs from the file");
      }
      for (const f of found) problems.push(`${uri}: ${f}`);
    }
    problems.push(...diff(outside.baseline, outside.current()).map((t) => `outside ${t}`));
    expect(problems).toEqual([]);
  });
});
