/**
 * A `serverfs mcp` process driven by hand over stdio, newline-delimited JSON-RPC, for what the SDK
 * client hides: when exactly stdin closes, which answers were written, a client that stops reading,
 * the exact lines a client of either protocol era sends and gets.
 */
import { expect } from "bun:test";
import type { Subprocess } from "bun";
import { BUN, CLI, REPO_ROOT } from "./workspace.ts";

type RequestId = string | number;

export interface RawServer {
  proc: Subprocess<"pipe", "pipe", "pipe">;
  send(msg: unknown): void;
  /** Writes `text` to stdin as it is (a line the client builds by hand). */
  write(text: string): void;
  /** Everything the server wrote to stderr so far (its log). */
  stderr(): string;
  /** Resolves with the answer to request `id` (read from stdout in order). */
  answer(id: RequestId): Promise<Record<string, unknown>>;
  /** Every answer read so far, by id. */
  answered: Map<RequestId, Record<string, unknown>>;
  /** Resolves once the server's stdout has ended and every line of it is read. */
  stdoutEnded: Promise<void>;
  /** `tools/call` of `name` as request `id`. */
  callTool(id: number, name: string, args: Record<string, unknown>): void;
}

export const INIT = {
  jsonrpc: "2.0",
  id: 0,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

/** Starts the server; nothing is sent yet. */
export function spawnRaw(configPath: string): RawServer {
  const proc = Bun.spawn([BUN, CLI, "mcp", "--config", configPath], { cwd: REPO_ROOT, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  let stderr = "";
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stderr) stderr += decoder.decode(chunk, { stream: true });
  })();
  const answered = new Map<RequestId, Record<string, unknown>>();
  const waiters = new Map<RequestId, (m: Record<string, unknown>) => void>();
  const stdoutEnded = (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of proc.stdout) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let nl = buffer.indexOf("\n"); nl !== -1; nl = buffer.indexOf("\n")) {
        const msg = JSON.parse(buffer.slice(0, nl)) as Record<string, unknown>;
        buffer = buffer.slice(nl + 1);
        const id = msg["id"];
        if (typeof id !== "number" && typeof id !== "string") continue;
        answered.set(id, msg);
        waiters.get(id)?.(msg);
      }
    }
  })();
  const write = (text: string) => {
    proc.stdin.write(text);
    void proc.stdin.flush();
  };
  const send = (msg: unknown) => write(`${JSON.stringify(msg)}\n`);
  const answer = (id: RequestId) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const done = answered.get(id);
      if (done) resolve(done);
      else waiters.set(id, resolve);
    });
  return {
    proc,
    send,
    write,
    stderr: () => stderr,
    answer,
    answered,
    stdoutEnded,
    callTool: (id, name, args) => send({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } }),
  };
}

/** Starts the server and completes the initialize handshake. */
export async function startRaw(configPath: string): Promise<RawServer> {
  const server = spawnRaw(configPath);
  server.send(INIT);
  await server.answer(0);
  server.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  return server;
}

/**
 * `messages` sent as they are, with no handshake of its own, to a fresh server: once every request (a
 * message with an id) has its answer, or the server has closed its stdout, stdin is closed and the
 * exit waited for. The answers by id.
 */
export async function rawSession(configPath: string, messages: readonly Record<string, unknown>[]): Promise<Map<RequestId, Record<string, unknown>>> {
  const server = spawnRaw(configPath);
  for (const message of messages) server.send(message);
  const ids = messages.flatMap((m) => (typeof m["id"] === "number" || typeof m["id"] === "string" ? [m["id"]] : []));
  await Promise.race([Promise.all(ids.map(server.answer)), server.stdoutEnded]);
  server.proc.stdin.end();
  await Promise.all([server.proc.exited, server.stdoutEnded]);
  return server.answered;
}

/**
 * Closes stdin while `name` (request 1) is still running: a `list_workdirs` sent after it (request 2)
 * is answered first, request 1 is not. Then the process must end (docs/mcp-tools.md: stdin EOF ends
 * it); it is killed if it is still there 5 s on. The exit code ("still running" then) and the
 * milliseconds from the close to the exit.
 */
export async function closeWhileBusy(raw: RawServer, name: string, args: Record<string, unknown>): Promise<{ code: number | string; ms: number }> {
  raw.callTool(1, name, args);
  raw.callTool(2, "list_workdirs", {});
  await raw.answer(2);
  expect(raw.answered.has(1)).toBe(false);
  const closedAt = performance.now();
  raw.proc.stdin.end();
  const code = await Promise.race([raw.proc.exited, Bun.sleep(5000).then(() => "still running")]);
  const ms = performance.now() - closedAt;
  if (code === "still running") raw.proc.kill("SIGKILL");
  return { code, ms };
}
