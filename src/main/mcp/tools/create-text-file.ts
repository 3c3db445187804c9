/** `create_text_file(workdir, path, content)` (docs/mcp-tools.md#create_text_file): a new UTF-8 file, never an overwrite. */
import * as v from "valibot";
import { ServerFsError } from "../../../shared/errors.ts";
import { revisionOf } from "../../../shared/fs/stat.ts";
import type { McpDeps } from "../deps.ts";
import { publishNew } from "../mutation/atomic-publish.ts";
import { runMutation } from "../mutation/pipeline.ts";
import { pathParam, textParam, workdirParam } from "../params.ts";
import { defineTool } from "../tool.ts";

const Output = v.strictObject({
  workdir: v.string(),
  path: v.string(),
  created: v.literal(true),
  bytes_written: v.number(),
  revision: v.string(),
});

export const createTextFile = (deps: McpDeps) =>
  defineTool({
    name: "create_text_file",
    title: "Create a text file",
    description:
      "Create a new UTF-8 text file (read-write workdirs only). Fails if anything already exists at the path or its parent directory is missing; never overwrites.",
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    input: v.strictObject({
      workdir: workdirParam(),
      path: pathParam("The new file; its parent directory must exist and nothing may be at the path."),
      content: textParam("The file's whole text, written byte for byte as UTF-8 (no NUL; at most the workdir's max_write_bytes)."),
    }),
    output: Output,
    unexpected: "MUTATION_FAILED",
    run(args, call) {
      const bytes = Buffer.from(args.content, "utf8");
      return runMutation(deps, call, {
        tool: "create_text_file",
        workdir: args.workdir,
        path: args.path,
        checkArguments({ ws, where }) {
          if (args.content.includes("\0")) throw new ServerFsError("BINARY_CONTENT_NOT_ALLOWED", `${where} content contains a NUL character`);
          if (bytes.length > ws.policy.max_write_bytes) throw new ServerFsError("WRITE_TOO_LARGE", `${where} content exceeds max_write_bytes`);
        },
        async commit(scope) {
          const st = await scope.inParent("PARENT_NOT_FOUND", (dirFd, name) => publishNew(dirFd, name, bytes, scope));
          const revision = revisionOf(st);
          call.audit["bytes_written"] = bytes.length;
          call.audit["revision"] = revision;
          return { workdir: scope.ws.alias, path: scope.path, created: true, bytes_written: bytes.length, revision };
        },
      });
    },
  });
