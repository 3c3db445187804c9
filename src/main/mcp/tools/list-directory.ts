/**
 * `list_directory(workdir, path, offset, limit)` (mcp-surface.md §5.2): one page of a directory's
 * admitted entries in byte order, each stat-ed without following links.
 */
import type { BigIntStats } from "node:fs";
import * as v from "valibot";
import { lstatAt, withDir } from "../../../shared/fs/dir-handle.ts";
import { osCode, osError } from "../../../shared/fs/os-errors.ts";
import { entryType, modifiedAt, sizeOf } from "../../../shared/fs/stat.ts";
import type { PathPolicy } from "../../../shared/path/policy.ts";
import { type McpDeps, readTarget } from "../deps.ts";
import { childPath, readDirEntries } from "../fs/dir-entries.ts";
import { defineTool, intParam, READ_ONLY } from "../tool.ts";

const Entry = v.strictObject({
  name: v.string(),
  path: v.string(),
  type: v.picklist(["file", "directory", "symlink", "other"]),
  size: v.nullable(v.number()),
  modified_at: v.nullable(v.string()),
});

const Output = v.strictObject({
  workdir: v.string(),
  path: v.string(),
  entries: v.array(Entry),
  offset: v.number(),
  limit: v.number(),
  returned: v.number(),
  has_more: v.boolean(),
});

type ListedEntry = v.InferOutput<typeof Entry>;

interface Page {
  entries: ListedEntry[];
  hasMore: boolean;
}

/** A no-follow stat of `name`, or null when it vanished since the directory was read. */
function statEntry(dirFd: number, name: string, where: string): BigIntStats | null {
  try {
    return lstatAt(dirFd, name);
  } catch (e) {
    if (osCode(e) === "ENOENT") return null;
    throw osError(e, "read", where);
  }
}

/**
 * Entries are stat-ed in sorted order only as far as the page needs (plus one, for `has_more`):
 * the same page as stat-ing all first, since a vanished entry simply drops out of the order.
 */
function listPage(dirFd: number, dirPath: string, policy: PathPolicy, offset: number, limit: number, where: string): Page {
  let names: string[];
  try {
    names = readDirEntries(dirFd)
      .map((e) => e.name)
      .filter((name) => policy.admitsChild(dirPath, name));
  } catch (e) {
    throw osError(e, "read", where);
  }
  const entries: ListedEntry[] = [];
  let surviving = 0;
  for (const name of names) {
    const st = statEntry(dirFd, name, where);
    if (st === null) continue;
    if (surviving >= offset + limit) return { entries, hasMore: true };
    if (surviving >= offset) {
      entries.push({ name, path: childPath(dirPath, name), type: entryType(st), size: sizeOf(st), modified_at: modifiedAt(st) });
    }
    surviving++;
  }
  return { entries, hasMore: false };
}

export const listDirectory = (deps: McpDeps) => {
  const { default_list_limit, max_list_entries } = deps.config.limits;
  return defineTool({
    name: "list_directory",
    title: "List a directory",
    description:
      "List one page of a directory's entries (name, path, type, size, modified_at), sorted by name. Hidden, reserved and denied entries are left out; symlinks are reported, never followed.",
    annotations: READ_ONLY,
    input: v.strictObject({
      workdir: v.string(),
      path: v.optional(v.string(), ""),
      offset: v.optional(intParam(0), 0),
      limit: v.optional(intParam(1), Math.min(default_list_limit, max_list_entries)),
    }),
    output: Output,
    unexpected: "READ_FAILED",
    run(args, call) {
      const { ws, path, segments, where } = readTarget(deps, call.audit, args.workdir, args.path);
      const limit = Math.min(args.limit, max_list_entries);
      const page = withDir(ws.realRoot, segments, { where, side: "read" }, (fd) =>
        listPage(fd, path, ws.pathPolicy, args.offset, limit, where),
      );
      call.audit["returned"] = page.entries.length;
      call.audit["has_more"] = page.hasMore;
      return {
        workdir: ws.alias,
        path,
        entries: page.entries,
        offset: args.offset,
        limit,
        returned: page.entries.length,
        has_more: page.hasMore,
      };
    },
  });
};
