/**
 * `download_binary_file(workdir, path)` (docs/mcp-tools.md#download_binary_file): the bytes of one regular file as an
 * embedded base64 resource next to the usual JSON text block. A read: it works in read-only
 * workdirs and takes neither the mutation lock nor the writer lease.
 */
import { createHash } from "node:crypto";
import { fstatSync, readSync } from "node:fs";
import * as v from "valibot";
import { ServerFsError } from "../../../shared/errors.ts";
import { closeQuietly, withParent } from "../../../shared/fs/dir-handle.ts";
import { openExistingFile } from "../../../shared/fs/existing-file.ts";
import { mimeTypeFor } from "../../../shared/fs/mime.ts";
import { revisionOf } from "../../../shared/fs/stat.ts";
import { type McpDeps, requireWorkspace } from "../deps.ts";
import { pathParam, workdirParam } from "../params.ts";
import { defineTool, READ_ONLY, WithContent } from "../tool.ts";
import { binaryTransferLimit, jsonBytes, transferTooLarge } from "../transfer-limit.ts";

const Output = v.strictObject({
  workdir: v.string(),
  path: v.string(),
  size: v.number(),
  mime_type: v.string(),
  sha256: v.string(),
  revision: v.string(),
});

/** Reads up to `size + 1` bytes: one byte more than expected is enough to see the file grew. */
function readAtMost(fd: number, size: number): Buffer {
  const buf = Buffer.alloc(size + 1);
  let got = 0;
  while (got < buf.length) {
    const n = readSync(fd, buf, got, buf.length - got, got);
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got);
}

const resourceUri = (alias: string, path: string): string => `serverfs://${alias}/${path.split("/").map(encodeURIComponent).join("/")}`;

const resourceBlock = (uri: string, mimeType: string, blob: string) => ({ type: "resource", resource: { uri, mimeType, blob } });

/** The tool result as the server sends it (the JSON text block, the resource, structuredContent). */
const resultMessage = (structured: Record<string, unknown>, uri: string, mimeType: string, blob: string) => ({
  result: { content: [{ type: "text", text: JSON.stringify(structured) }, resourceBlock(uri, mimeType, blob)], structuredContent: structured },
});

export const downloadBinaryFile = (deps: McpDeps) =>
  defineTool({
    name: "download_binary_file",
    title: "Download a binary file",
    description:
      "Return the bytes of one regular file as a base64 embedded resource, with its size, MIME type, SHA-256 and revision (workdirs with binary transfer enabled only).",
    annotations: READ_ONLY,
    input: v.strictObject({ workdir: workdirParam(), path: pathParam("The regular file to download.") }),
    output: Output,
    unexpected: "READ_FAILED",
    run(args, call) {
      const ws = requireWorkspace(deps, args.workdir);
      if (!ws.policy.binary_transfer_enabled) throw new ServerFsError("BINARY_TRANSFER_DISABLED", "binary transfer is disabled for this workdir");
      const { path, segments } = ws.confine(args.path);
      call.audit["path"] = path;
      const where = ws.where(path);
      if (segments.length === 0) throw new ServerFsError("NOT_A_FILE", `${where} is a directory, not a file`);
      const mime = mimeTypeFor(segments[segments.length - 1] ?? "");
      const uri = resourceUri(ws.alias, path);
      const { bytes, revision } = withParent(ws.realRoot, segments, { where, side: "read" }, (dirFd, name) => {
        const file = openExistingFile(dirFd, name, where, "read");
        try {
          const before = revisionOf(file.st);
          // Everything of the answer but the payload, measured as it will be sent (SHA-256 aside, fixed-size).
          const shell = { workdir: ws.alias, path, size: Number(file.st.size), mime_type: mime, sha256: "0".repeat(64), revision: before };
          const limit = binaryTransferLimit(ws, deps.transport, jsonBytes(resultMessage(shell, uri, mime, "")));
          if (file.st.size > BigInt(limit)) throw transferTooLarge("BINARY_FILE_TOO_LARGE", ws, limit, where);
          const data = readAtMost(file.fd, Number(file.st.size));
          if (BigInt(data.length) !== file.st.size || revisionOf(fstatSync(file.fd, { bigint: true })) !== before) {
            throw new ServerFsError("FILE_CHANGED_DURING_READ", `${where} changed while it was being read`);
          }
          return { bytes: data, revision: before };
        } finally {
          closeQuietly(file.fd);
        }
      });
      const sha256 = createHash("sha256").update(bytes).digest("hex");
      Object.assign(call.audit, { bytes_returned: bytes.length, mime_type: mime, revision });
      const structured = { workdir: ws.alias, path, size: bytes.length, mime_type: mime, sha256, revision };
      return new WithContent(structured, [resourceBlock(uri, mime, bytes.toString("base64"))]);
    },
  });
