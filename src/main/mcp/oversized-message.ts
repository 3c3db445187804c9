/**
 * The answer to a stdio request too large to be read (docs/mcp-tools.md#stdio): only its first
 * bytes are known (message-prefix.ts). An upload is answered like any transfer over the limit, a
 * BINARY_PAYLOAD_TOO_LARGE tool result naming the way around; any other request gets JSON-RPC
 * "Invalid Request"; a message without a readable id (a notification) gets nothing.
 */
import type { MessagePrefix } from "./message-ends.ts";

/** JSON-RPC "Invalid Request": the message was never read, so neither its method nor its params. */
const INVALID_REQUEST = -32600;

export interface OversizedAnswer {
  /** For the log: the tool code, or `invalid_request` for the JSON-RPC error. */
  code: "BINARY_PAYLOAD_TOO_LARGE" | "invalid_request";
  message: object;
}

export function oversizedAnswer(head: MessagePrefix, bytes: number, limit: number): OversizedAnswer | null {
  if (head.id === null) return null;
  const size = `the message is ${bytes} bytes; a stdio message may hold at most ${limit}`;
  if (head.method === "tools/call" && head.tool === "upload_binary_file") {
    const text = `BINARY_PAYLOAD_TOO_LARGE: ${size}; use the HTTP transport for it`;
    return { code: "BINARY_PAYLOAD_TOO_LARGE", message: { jsonrpc: "2.0", id: head.id, result: { content: [{ type: "text", text }], isError: true } } };
  }
  return { code: "invalid_request", message: { jsonrpc: "2.0", id: head.id, error: { code: INVALID_REQUEST, message: size } } };
}
