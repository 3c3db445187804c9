/** An MCP session over stdio as raw lines: what a client of any era sends, and exactly what comes back. */
import { spawnCli } from "./process.ts";

type Json = Record<string, unknown>;

/**
 * The answers to `messages`, sent as raw lines to `serverfs mcp --config config`, by request id. Reads
 * until every request (a message with an id) has its line, then closes stdin and waits for the exit.
 */
export async function rawSession(config: string, messages: readonly Json[]): Promise<Map<unknown, Json>> {
  const proc = spawnCli(["mcp", "--config", config]);
  for (const message of messages) proc.stdin.write(`${JSON.stringify(message)}\n`);
  await proc.stdin.flush();
  const expected = messages.filter((m) => "id" in m).length;
  const reader = proc.stdout.getReader();
  const decoder = new TextDecoder();
  let out = "";
  while ((out.match(/\n/g) ?? []).length < expected) {
    const { value, done } = await reader.read();
    if (done) break;
    out += decoder.decode(value, { stream: true });
  }
  proc.stdin.end();
  await proc.exited;
  const byId = new Map<unknown, Json>();
  for (const line of out.trim().split("\n")) {
    const message = JSON.parse(line) as Json;
    byId.set(message["id"], message);
  }
  return byId;
}
