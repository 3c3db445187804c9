/**
 * Drives the real `serverfs mcp` process through the SDK's own Client, over stdio or HTTP, the
 * way an MCP client would. The server's stderr (the audit log) is captured for assertions.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult, ClientCapabilities } from "@modelcontextprotocol/sdk/types.js";
import { poll } from "./poll.ts";
import { REPO_ROOT, SERVERFS } from "./workspace.ts";

export interface McpSession {
  client: Client;
  /** Everything the server wrote to stderr so far. */
  stderr(): string;
  /** The audit records so far, parsed. */
  audit(): Record<string, unknown>[];
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
  close(): Promise<void>;
  /** The server's process id, where the helper started it. */
  pid?: number | null;
}

export const CODE_PATTERN = /^([A-Z][A-Z0-9_]{2,}): /;

/** The error code of a failed tool result, or null for a success. */
export function errorCode(result: CallToolResult): string | null {
  if (!result.isError) return null;
  const text = (result.content[0] as { text?: string } | undefined)?.text ?? "";
  return CODE_PATTERN.exec(text)?.[1] ?? "MALFORMED_ERROR";
}

export function structured<T = Record<string, unknown>>(result: CallToolResult): T {
  if (result.isError) throw new Error(`tool failed: ${(result.content[0] as { text: string }).text}`);
  return result.structuredContent as T;
}

export const parseAudit = (text: string): Record<string, unknown>[] =>
  text
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

/**
 * `launcher` (e.g. `["prlimit", "--nofile=32", "--"]`) is prepended to the server's command line;
 * `capabilities` are what the client declares (e.g. `{ elicitation: {} }`).
 */
export async function startStdio(
  configPath: string,
  env: Record<string, string> = {},
  launcher: string[] = [],
  capabilities: ClientCapabilities = {},
): Promise<McpSession> {
  const [command, ...args] = [...launcher, ...SERVERFS, "mcp", "--config", configPath];
  const transport = new StdioClientTransport({
    command: command!,
    args,
    cwd: REPO_ROOT,
    env: { ...(process.env as Record<string, string>), ...env },
    stderr: "pipe",
  });
  let err = "";
  transport.stderr?.on("data", (d: Buffer) => {
    err += d.toString("utf8");
  });
  const client = new Client({ name: "serverfs-test", version: "1.0.0" }, { capabilities });
  await client.connect(transport);
  return {
    client,
    stderr: () => err,
    audit: () => parseAudit(err),
    call: (name, args = {}) => client.callTool({ name, arguments: args }) as Promise<CallToolResult>,
    close: () => client.close(),
    pid: transport.pid,
  };
}

/**
 * Makes one call and returns its result with its `tool_call` audit record. stderr and stdout are
 * separate pipes, so a response can overtake its audit line: this waits (bounded) for the record.
 * Calls must not overlap while this runs.
 */
export async function callAudited(
  session: McpSession,
  name: string,
  args: Record<string, unknown> = {},
  timeoutMs = 5_000,
): Promise<{ result: CallToolResult; record: Record<string, unknown> }> {
  const toolCalls = () => session.audit().filter((r) => r["event"] === "tool_call");
  const before = toolCalls().length;
  const result = await session.call(name, args);
  await poll(() => toolCalls().length > before, timeoutMs, `a tool_call audit record for ${name}`);
  return { result, record: toolCalls()[before]! };
}
