/**
 * Shared pieces of the end-to-end suite: a Bridge and `serverfs mcp` as two real processes, the MCP
 * side reached over stdio or Streamable HTTP through the SDK's own Client, and helpers that follow
 * a task the way a client would (long-polling events instead of sleeping).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult, ClientCapabilities } from "@modelcontextprotocol/sdk/types.js";
import { TERMINAL } from "../helpers/bridge.ts";
import { errorCode, type McpSession, parseAudit, structured } from "../helpers/mcp-client.ts";
import { poll } from "../helpers/poll.ts";
import { spawnCli } from "../helpers/process.ts";

export type Json = Record<string, unknown>;

/** A call that must succeed: its structuredContent. */
export async function ok<T = Json>(session: McpSession, name: string, args: Json = {}): Promise<T> {
  return structured<T>(await session.call(name, args));
}

/** A call that must fail: its code. */
export async function code(session: McpSession, name: string, args: Json = {}): Promise<string | null> {
  return errorCode(await session.call(name, args));
}

/**
 * Polls get_agent_task until `until` holds, waiting on the event long-poll between reads so that a
 * change is seen as soon as the Bridge commits it. Bounded by `timeoutMs`.
 */
export async function waitForTask(session: McpSession, taskId: string, until: (t: Json) => boolean, timeoutMs = 20_000): Promise<Json> {
  const deadline = Date.now() + timeoutMs;
  let cursor = 0;
  for (;;) {
    const task = await ok(session, "get_agent_task", { task_id: taskId });
    if (until(task)) return task;
    if (Date.now() > deadline) throw new Error(`task stuck in ${String(task["status"])}`);
    const page = await ok<{ next_after_event_id: number }>(session, "read_agent_task_events", {
      task_id: taskId,
      after_event_id: cursor,
      limit: 500,
      wait_ms: 500,
    });
    cursor = page.next_after_event_id;
  }
}

export const hasStatus =
  (...statuses: string[]) =>
  (t: Json) =>
    statuses.includes(String(t["status"]));

export const isTerminal = (t: Json) => TERMINAL.has(String(t["status"]));

/** Every event of a task, following the cursor to the end. */
export async function allEvents(session: McpSession, taskId: string): Promise<Json[]> {
  const events: Json[] = [];
  let cursor = 0;
  for (;;) {
    const page = await ok<{ events: Json[]; next_after_event_id: number }>(session, "read_agent_task_events", {
      task_id: taskId,
      after_event_id: cursor,
      limit: 500,
    });
    events.push(...page.events);
    if (page.events.length === 0) return events;
    cursor = page.next_after_event_id;
  }
}

/** Submits a task that must be accepted; returns its id. */
export async function submit(session: McpSession, args: Json): Promise<string> {
  const r = await ok<{ task_id: string }>(session, "submit_agent_task", { runtime: "fake", workdir: "repo", ...args });
  return r.task_id;
}

/** Every key at any depth of a JSON value. */
export function deepKeys(value: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const v of value) deepKeys(v, out);
  else if (typeof value === "object" && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      out.add(k);
      deepKeys(v, out);
    }
  }
  return out;
}

/**
 * Records every result the session returns, so that a test can check a property of all of them at
 * the end (no native ids anywhere, ...).
 */
export function recording(session: McpSession): McpSession & { results: CallToolResult[] } {
  const results: CallToolResult[] = [];
  return {
    ...session,
    results,
    async call(name, args) {
      const r = await session.call(name, args);
      results.push(r);
      return r;
    },
  };
}

/** `serverfs mcp --http 127.0.0.1:0` with the SDK's Streamable HTTP client connected to it, declaring `capabilities`. */
export async function startHttp(configPath: string, capabilities: ClientCapabilities = {}): Promise<McpSession & { port: number }> {
  const proc = spawnCli(["mcp", "--config", configPath, "--http", "127.0.0.1:0"]);
  let err = "";
  const event = await new Promise<Json>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no startup event from serverfs mcp --http")), 20_000);
    void (async () => {
      const decoder = new TextDecoder();
      // keeps draining stderr after startup, so the log stays complete and the pipe never fills
      for await (const chunk of proc.stderr) {
        err += decoder.decode(chunk, { stream: true });
        const found = parseAudit(err).find((r) => r["event"] === "startup");
        if (found) {
          clearTimeout(timer);
          resolve(found);
        }
      }
      clearTimeout(timer);
      reject(new Error("serverfs mcp --http exited before its startup event"));
    })();
  });
  const port = Number(String(event["listen"]).split(":").at(-1));
  const client = new Client({ name: "serverfs-e2e-http", version: "1.0.0" }, { capabilities });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
  return {
    client,
    port,
    stderr: () => err,
    audit: () => parseAudit(err),
    call: (name, args = {}) => client.callTool({ name, arguments: args }) as Promise<CallToolResult>,
    async close() {
      await client.close();
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

/** Waits (bounded) until `check` holds; stderr and stdout are separate pipes, so logs may lag. */
export const eventually = (check: () => boolean, timeoutMs = 5_000): Promise<void> => poll(check, timeoutMs, "the logged fact");
