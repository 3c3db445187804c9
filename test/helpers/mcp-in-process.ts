/**
 * The real MCP server in the test's own process: `prepareMcp` and `createMcpServer` as `serverfs mcp`
 * runs them over stdio (the same config file, tools, workdirs, walk-pool threads and Bridge client),
 * reached by the SDK's own Client over a pair of in-memory pipes instead of a child process. For
 * suites whose subject is what the tools answer, not how a process frames, pauses or ends: it saves
 * a process start per server and the pipe round trips per call (docs/performance.md, the suite).
 * Each message still goes through each side's own stdio serializer and parser, one JSON line, so
 * what a call carries (NUL, lone surrogates, `undefined` fields) arrives as it would over stdio.
 * Suites about stdin EOF, signals, stdout backpressure, message size limits, process memory or CPU,
 * descriptors, or more than one server contending keep `startStdio` (test/helpers/mcp-client.ts).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { deserializeMessage as clientDecode, serializeMessage as clientEncode } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport as ClientTransport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { CallToolResult, ClientCapabilities } from "@modelcontextprotocol/sdk/types.js";
import { type Transport as ServerTransport, deserializeMessage as serverDecode, serializeMessage as serverEncode } from "@modelcontextprotocol/server";
import { createMcpServer } from "../../src/main/mcp/server.ts";
import { auditStartup, prepareMcp } from "../../src/main/mcp/startup.ts";
import { type McpSession, parseAudit } from "./mcp-client.ts";

/** One end of an in-memory pipe: what it sends is one serialized line, parsed by the other end. */
interface End<Out, In> {
  start(): Promise<void>;
  send(message: Out): Promise<void>;
  close(): Promise<void>;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((message: In) => void) | undefined;
}

type ClientMessage = Parameters<ClientTransport["send"]>[0];
type ServerMessage = Parameters<ServerTransport["send"]>[0];

function linkedPair(): [End<ClientMessage, ClientMessage>, End<ServerMessage, ServerMessage>] {
  let open = true;
  const closeBoth = async () => {
    if (!open) return;
    open = false;
    client.onclose?.();
    server.onclose?.();
  };
  // Delivered on a later turn, as a pipe's reader sees a line: a sender never runs its peer's handler inline.
  const deliver = (receive: () => void) => {
    if (!open) throw new Error("the in-memory pipe is closed");
    setImmediate(() => open && receive());
  };
  const client: End<ClientMessage, ClientMessage> = {
    start: async () => {},
    send: async (message) => {
      const line = clientEncode(message);
      deliver(() => server.onmessage?.(serverDecode(line.trimEnd())));
    },
    close: closeBoth,
  };
  const server: End<ServerMessage, ServerMessage> = {
    start: async () => {},
    send: async (message) => {
      const line = serverEncode(message);
      deliver(() => client.onmessage?.(clientDecode(line.trimEnd())));
    },
    close: closeBoth,
  };
  return [client, server];
}

/**
 * Starts the server of `configPath` in this process as `serverfs mcp --config` would over stdio (a
 * 2025-era connection, its `startup` record first) and connects a client declaring `capabilities`.
 * `stderr()` is the audit log, written before each answer leaves; `pid` is absent: there is no process.
 */
export async function startInProcess(configPath: string, capabilities: ClientCapabilities = {}): Promise<McpSession> {
  let err = "";
  const rt = prepareMcp(configPath, "stdio", { write: (line) => (err += line) });
  auditStartup(rt, "stdio");
  const ending = new AbortController();
  const server = createMcpServer({ ...rt, signal: ending.signal, era: "legacy" });
  const [clientEnd, serverEnd] = linkedPair();
  await server.connect(serverEnd);
  const client = new Client({ name: "serverfs-test", version: "1.0.0" }, { capabilities });
  await client.connect(clientEnd);
  return {
    client,
    stderr: () => err,
    audit: () => parseAudit(err),
    call: (name, args = {}) => client.callTool({ name, arguments: args }) as Promise<CallToolResult>,
    close: async () => {
      ending.abort();
      await client.close();
      await server.close();
      rt.deps.heavy.close();
    },
  };
}
