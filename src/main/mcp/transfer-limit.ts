/**
 * How large one binary transfer may be on the transport that carries it (docs/reliability.md,
 * "Hardening: writes, temp files, transfers and HTTP"). Over stdio a whole JSON-RPC message is one
 * line, and the MCP SDK's stdio reader (`ReadBuffer`, on the client's side as on ours) gives up on a
 * session once it holds more than 10 MiB: the unread rest of a line plus the chunk just read. So a
 * stdio transfer is bounded by the largest payload whose whole message fits that cap with 64 KiB
 * (one pipe read) to spare; HTTP has no such cap. The smaller of that and the workdir's
 * `max_binary_transfer_bytes` is the call's limit.
 */
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from "@modelcontextprotocol/server";
import type { Config } from "../../shared/config/load.ts";
import { ServerFsError } from "../../shared/errors.ts";
import type { Workspace } from "../../shared/workspace.ts";

export type Transport = "stdio" | "http";

export const STDIO_LINE_CAP = STDIO_DEFAULT_MAX_BUFFER_SIZE;
export const STDIO_HEADROOM = 64 * 1024;
/** The JSON-RPC frame beyond what a tool can measure itself: `jsonrpc`, the id, `_meta`. */
const FRAME_BYTES = 1024;
/** An upload's arguments besides its payload (workdir, path, revision), generously. */
const UPLOAD_ARGUMENTS_BYTES = 1024 * 1024;

/** The UTF-8 size of `value` as JSON: the part of a message a tool can measure. */
export const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

/**
 * The largest payload, in decoded bytes, `ws` may transfer on `transport` in a message whose parts
 * other than the base64 payload measure `envelopeBytes`.
 */
export function binaryTransferLimit(ws: Workspace, transport: Transport, envelopeBytes: number): number {
  const configured = ws.policy.max_binary_transfer_bytes;
  if (transport !== "stdio") return configured;
  const room = STDIO_LINE_CAP - STDIO_HEADROOM - FRAME_BYTES - envelopeBytes;
  return Math.min(configured, Math.max(0, Math.floor(room / 4) * 3));
}

/**
 * BINARY_FILE_TOO_LARGE or BINARY_PAYLOAD_TOO_LARGE for a transfer over `limit`; when stdio's cap,
 * not the workdir's setting, is what refuses it, the message says so and names the way around.
 */
export function transferTooLarge(code: "BINARY_FILE_TOO_LARGE" | "BINARY_PAYLOAD_TOO_LARGE", ws: Workspace, limit: number, where: string): ServerFsError {
  const what = code === "BINARY_FILE_TOO_LARGE" ? "the file" : "the payload";
  if (limit < ws.policy.max_binary_transfer_bytes) {
    return new ServerFsError(code, `${where} ${what} exceeds ${limit} bytes, the largest binary transfer stdio can carry; use the HTTP transport for it`);
  }
  return new ServerFsError(code, `${where} ${what} exceeds max_binary_transfer_bytes`);
}

/**
 * How much one incoming message may hold, for the server's own readers: the stdio line buffer and
 * the HTTP request body (whose SDK default, 4 MiB, would refuse uploads far below the configured
 * limit). Any upload up to the configured limit is taken in, so one over the call's limit is
 * answered BINARY_PAYLOAD_TOO_LARGE instead of ending the session or failing the request.
 */
export function incomingMessageLimit(config: Config): number {
  const uploads = config.workdirs.filter((w) => w.policy.binary_transfer_enabled).map((w) => w.policy.max_binary_transfer_bytes);
  const largest = 4 * Math.ceil(Math.max(0, ...uploads) / 3) + UPLOAD_ARGUMENTS_BYTES + FRAME_BYTES + STDIO_HEADROOM;
  return Math.max(STDIO_LINE_CAP, largest);
}
