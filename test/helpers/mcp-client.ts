/**
 * Drives the real `serverfs mcp` process through the SDK's own Client, over stdio or HTTP, the
 * way an MCP client would. The server's stderr (the audit log) is captured for assertions.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { BUN, CLI, REPO_ROOT } from "./workspace.ts";

export interface McpSession {
  client: Client;
  /** Everything the server wrote to stderr so far. */
  stderr(): string;
  /** The audit records so far, parsed. */
  audit(): Record<string, unknown>[];
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
  close(): Promise<void>;
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

export async function startStdio(configPath: string, env: Record<string, string> = {}): Promise<McpSession> {
  const transport = new StdioClientTransport({
    command: BUN,
    args: [CLI, "mcp", "--config", configPath],
    cwd: REPO_ROOT,
    env: { ...(process.env as Record<string, string>), ...env },
    stderr: "pipe",
  });
  let err = "";
  transport.stderr?.on("data", (d: Buffer) => {
    err += d.toString("utf8");
  });
  const client = new Client({ name: "serverfs-test", version: "1.0.0" });
  await client.connect(transport);
  return {
    client,
    stderr: () => err,
    audit: () => parseAudit(err),
    call: (name, args = {}) => client.callTool({ name, arguments: args }) as Promise<CallToolResult>,
    close: () => client.close(),
  };
}
