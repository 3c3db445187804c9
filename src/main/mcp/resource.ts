/**
 * The `serverfs://{workdir}/{path}` resource (docs/mcp-tools.md#the-file-resource): read_text_file from line 1
 * with `max_lines = max_read_lines`, all or nothing. Failures are JSON-RPC errors whose message is
 * exactly `CODE: message` (not the SDK's McpError, which would prefix it). Their JSON-RPC code depends
 * on the protocol era (docs/protocol.md): 2025-11-25's "resource not found" is -32002; 2026-07-28 says
 * -32602 with the URI in `data.uri`, which is also what a URI this server cannot read gets there.
 */
import { ProtocolErrorCode, type ReadResourceResult } from "@modelcontextprotocol/server";
import { ServerFsError } from "../../shared/errors.ts";
import { decodeStrict } from "../../shared/utf8.ts";
import { type McpDeps, requireWorkspace } from "./deps.ts";
import { readTextPage } from "./fs/text-page.ts";
import { RESOURCE_NOT_FOUND } from "./wire-server.ts";

export const RESOURCE_TEMPLATE = {
  uriTemplate: "serverfs://{workdir}/{path}",
  name: "workdir-file",
  title: "A text file in a workdir",
  description: "A UTF-8 text file of a workdir, read whole (one page at most).",
  mimeType: "text/plain",
};

const SCHEME = "serverfs://";

/** Percent-decodes once, as bytes; a `%` not followed by two hex digits stays literal. */
function percentDecode(s: string): string {
  const raw = Buffer.from(s, "utf8");
  const out: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    const hex = raw[i] === 0x25 ? raw.toString("latin1", i + 1, i + 3) : "";
    if (/^[0-9A-Fa-f]{2}$/.test(hex)) {
      out.push(Number.parseInt(hex, 16));
      i += 2;
    } else out.push(raw[i]!);
  }
  const text = decodeStrict(Uint8Array.from(out));
  if (text === null) throw new ServerFsError("INVALID_ARGUMENT", "the resource URI path is not valid UTF-8 once decoded");
  return text;
}

/** `serverfs://<alias>/<path>`: the alias up to the first `/`, everything after it the (still encoded) path. */
function splitUri(uri: string): { alias: string; encodedPath: string } {
  if (!uri.startsWith(SCHEME)) throw new ServerFsError("INVALID_ARGUMENT", "the resource URI must start with serverfs://");
  const rest = uri.slice(SCHEME.length);
  const slash = rest.indexOf("/");
  if (slash === -1) return { alias: rest, encodedPath: "" };
  return { alias: rest.slice(0, slash), encodedPath: rest.slice(slash + 1) };
}

function rpcError(e: unknown, uri: string, legacyEra: boolean): Error & { code: number; data?: { uri: string } } {
  const err = e instanceof ServerFsError ? e : new ServerFsError("READ_FAILED", "unexpected internal failure");
  const notFound = err.code === "WORKDIR_NOT_FOUND" || err.code === "PATH_NOT_FOUND";
  if (legacyEra) return Object.assign(new Error(err.toText()), { code: notFound ? RESOURCE_NOT_FOUND : ProtocolErrorCode.InternalError });
  // another scheme, or a path that is not UTF-8: no resource of this server has that URI
  if (notFound || err.code === "INVALID_ARGUMENT") return Object.assign(new Error(err.toText()), { code: ProtocolErrorCode.InvalidParams, data: { uri } });
  return Object.assign(new Error(err.toText()), { code: ProtocolErrorCode.InternalError });
}

/** Reads `uri`; `legacyEra` picks the JSON-RPC codes of its failures (see above). */
export async function readResource(deps: McpDeps, uri: string, signal: AbortSignal, legacyEra: boolean): Promise<ReadResourceResult> {
  try {
    const { alias, encodedPath } = splitUri(uri);
    const ws = requireWorkspace(deps, alias);
    const page = await readTextPage(ws, ws.confine(percentDecode(encodedPath)), {
      startLine: 1,
      maxLines: ws.policy.max_read_lines,
      maxBytes: ws.policy.max_read_bytes,
      whole: true,
      maxScanBytes: deps.config.limits.max_scan_bytes,
      signal,
    });
    return { contents: [{ uri, mimeType: "text/plain", text: page.content }] };
  } catch (e) {
    throw rpcError(e, uri, legacyEra);
  }
}
