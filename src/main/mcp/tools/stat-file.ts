/** `stat_file(workdir, path)` (docs/mcp-tools.md#stat_file): a no-follow stat of the final segment. */

import { fstatSync } from "node:fs";
import * as v from "valibot";
import { closeQuietly, lstatAt, openRoot, withParent } from "../../../shared/fs/dir-handle.ts";
import { mimeTypeFor } from "../../../shared/fs/mime.ts";
import { osError } from "../../../shared/fs/os-errors.ts";
import { entryType, modifiedAt, revisionOf, sizeOf } from "../../../shared/fs/stat.ts";
import { type McpDeps, readTarget } from "../deps.ts";
import { pathParam, workdirParam } from "../params.ts";
import { defineTool, READ_ONLY } from "../tool.ts";
import { ENTRY_STAT } from "./entry-stat.ts";

const Output = v.strictObject({
  workdir: v.string(),
  path: v.string(),
  ...ENTRY_STAT,
  mime_type: v.nullable(v.string()),
  revision: v.string(),
});

export const statFile = (deps: McpDeps) =>
  defineTool({
    name: "stat_file",
    title: "Stat a file",
    description: "Type, size, modification time, MIME type and revision of one path (symlinks are reported, never followed).",
    annotations: READ_ONLY,
    input: v.strictObject({
      workdir: workdirParam(),
      path: pathParam("The file, directory or other entry to stat; a final symlink is reported, not followed."),
    }),
    output: Output,
    unexpected: "READ_FAILED",
    run(args, call) {
      const { ws, path, segments, where } = readTarget(deps, call.audit, args.workdir, args.path);
      let st: ReturnType<typeof fstatSync>;
      if (segments.length === 0) {
        const fd = openRoot(ws.realRoot, where, "read");
        try {
          st = fstatSync(fd, { bigint: true });
        } finally {
          closeQuietly(fd);
        }
      } else {
        st = withParent(ws.realRoot, segments, { where, side: "read" }, (dirFd, name) => {
          try {
            return lstatAt(dirFd, name);
          } catch (e) {
            throw osError(e, "read", where);
          }
        });
      }
      const type = entryType(st);
      call.audit["type"] = type;
      return {
        workdir: ws.alias,
        path,
        type,
        size: sizeOf(st),
        modified_at: modifiedAt(st),
        mime_type: type === "file" ? mimeTypeFor(segments[segments.length - 1] ?? "") : null,
        revision: revisionOf(st),
      };
    },
  });
