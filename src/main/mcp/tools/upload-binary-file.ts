/**
 * `upload_binary_file(workdir, path, data_base64, overwrite = false, expected_revision = null)`
 * (docs/mcp-tools.md#upload_binary_file): create-only by default, exactly as `create_text_file`; with `overwrite`
 * it atomically replaces one existing regular file in the exact state the client saw.
 */
import { createHash } from "node:crypto";
import * as v from "valibot";
import { ServerFsError } from "../../../shared/errors.ts";
import { closeQuietly } from "../../../shared/fs/dir-handle.ts";
import { revisionOf } from "../../../shared/fs/stat.ts";
import type { McpDeps } from "../deps.ts";
import { publishNew, publishReplacement } from "../mutation/atomic-publish.ts";
import { type MutationScope, runMutation } from "../mutation/pipeline.ts";
import { openReplaceTarget } from "../mutation/replace-target.ts";
import { decodeStrictBase64 } from "../mutation/strict-base64.ts";
import { flagParam, nullableTextParam, pathParam, textParam, withDefault, workdirParam } from "../params.ts";
import { defineTool } from "../tool.ts";
import { binaryTransferLimit, jsonBytes, transferTooLarge } from "../transfer-limit.ts";

const Output = v.strictObject({
  workdir: v.string(),
  path: v.string(),
  created: v.boolean(),
  replaced: v.boolean(),
  bytes_written: v.number(),
  sha256: v.string(),
  revision_before: v.nullable(v.string()),
  revision: v.string(),
});

/** Replaces the existing file; returns the revision it replaced and the committed stat. */
function replace(scope: MutationScope, bytes: Buffer, expected: string) {
  return scope.inParent("PATH_NOT_FOUND", async (dirFd, name) => {
    const target = openReplaceTarget(dirFd, name, expected, scope.where);
    try {
      return await publishReplacement(dirFd, name, target, bytes, expected, scope);
    } finally {
      closeQuietly(target.fd);
    }
  });
}

export const uploadBinaryFile = (deps: McpDeps) =>
  defineTool({
    name: "upload_binary_file",
    title: "Upload a binary file",
    description:
      "Write base64-encoded bytes to a file (read-write workdirs with binary transfer enabled only). Creates a new file by default; overwrite = true replaces an existing regular file and then needs its expected_revision.",
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    input: v.strictObject({
      workdir: workdirParam(),
      path: pathParam("The file to write; without overwrite its parent must exist and nothing may be at the path."),
      data_base64: textParam('The bytes, standard base64 with padding and no whitespace ("" is an empty file).'),
      overwrite: withDefault(flagParam("true replaces an existing regular file, which then needs expected_revision."), false),
      expected_revision: withDefault(
        nullableTextParam("The revision the file to replace must still have (from stat_file); given exactly when overwrite is true."),
        null,
      ),
    }),
    output: Output,
    unexpected: "MUTATION_FAILED",
    run(args, call) {
      const { overwrite, expected_revision: expected } = args;
      let bytes: Buffer = Buffer.alloc(0);
      return runMutation(deps, call, {
        tool: "upload_binary_file",
        workdir: args.workdir,
        path: args.path,
        binary: true,
        checkArguments({ ws, where }) {
          if (overwrite && expected === null) {
            throw new ServerFsError("EXPECTED_REVISION_REQUIRED", `${where} overwrite = true needs expected_revision`);
          }
          if (!overwrite && expected !== null) {
            throw new ServerFsError("EXPECTED_REVISION_NOT_ALLOWED", `${where} expected_revision is only allowed with overwrite = true`);
          }
          const envelope = jsonBytes({ method: "tools/call", params: { name: "upload_binary_file", arguments: { ...args, data_base64: "" } } });
          const limit = binaryTransferLimit(ws, deps.transport, envelope);
          bytes = decodeStrictBase64(args.data_base64, limit, where, () => transferTooLarge("BINARY_PAYLOAD_TOO_LARGE", ws, limit, where));
        },
        async commit(scope) {
          // After step 7, expected_revision is given exactly when overwrite is true.
          const st = await (expected === null
            ? scope.inParent("PARENT_NOT_FOUND", (dirFd, name) => publishNew(dirFd, name, bytes, scope))
            : replace(scope, bytes, expected));
          const revision = revisionOf(st);
          Object.assign(call.audit, { bytes_written: bytes.length, revision });
          return {
            workdir: scope.ws.alias,
            path: scope.path,
            created: expected === null,
            replaced: expected !== null,
            bytes_written: bytes.length,
            sha256: createHash("sha256").update(bytes).digest("hex"),
            revision_before: expected,
            revision,
          };
        },
      });
    },
  });
