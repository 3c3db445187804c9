/**
 * One MCP server process driven by the SDK's own Client over stdio, exactly as an MCP client
 * would drive it. The same code launches ServerFS and the reference server, so both pay the same
 * client-side costs. The server's stderr is drained (a full pipe would stall the server) and only
 * its tail is kept, for the error message when a launch fails.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

export interface ServerLaunch {
  /** Short name used in progress lines and the JSON report. */
  label: string;
  command: string;
  args: string[];
  cwd: string;
}

export interface StdioSession {
  /** Spawn → initialize answered (and `notifications/initialized` sent), in milliseconds. */
  startupMs: number;
  /** A successful tool call's result; a failed one (isError) throws with its text. */
  call(name: string, args: Record<string, unknown>): Promise<CallToolResult>;
  close(): Promise<void>;
}

/** Bounds one tool call; the slowest measured call (the reference walk) takes seconds. */
const CALL_TIMEOUT_MS = 120_000;
const STDERR_TAIL = 2_000;

export async function openSession(launch: ServerLaunch): Promise<StdioSession> {
  const transport = new StdioClientTransport({
    command: launch.command,
    args: launch.args,
    cwd: launch.cwd,
    env: process.env as Record<string, string>,
    stderr: "pipe",
  });
  let tail = "";
  transport.stderr?.on("data", (d: Buffer) => {
    tail = (tail + d.toString("utf8")).slice(-STDERR_TAIL);
  });
  const client = new Client({ name: "serverfs-bench", version: "1.0.0" });
  const started = performance.now();
  try {
    await client.connect(transport);
  } catch (e) {
    throw new Error(`${launch.label}: initialize failed (${e instanceof Error ? e.message : String(e)}); stderr: ${tail}`);
  }
  const startupMs = performance.now() - started;
  return {
    startupMs,
    async call(name, args) {
      const result = (await client.callTool({ name, arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS })) as CallToolResult;
      if (result.isError) {
        const text = (result.content[0] as { text?: string } | undefined)?.text ?? "";
        throw new Error(`${launch.label}: ${name} failed: ${text}`);
      }
      return result;
    },
    close: () => client.close(),
  };
}
