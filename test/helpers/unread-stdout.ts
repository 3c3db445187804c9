/**
 * A real `serverfs mcp` whose stdout is a FIFO held open and never read (docs/reliability.md,
 * "Hardening: the event loop, reads and memory"), initialized and started, with its audit log read
 * from stderr: the memory test and the hardening bench drive it with `list_directory` pages.
 */
import { closeSync, constants, openSync } from "node:fs";
import { join } from "node:path";
import { parseAudit } from "./mcp-client.ts";
import { poll } from "./poll.ts";
import { INIT } from "./raw-stdio.ts";
import { BUN, CLI, REPO_ROOT } from "./workspace.ts";

export interface UnreadStdoutServer {
  readonly proc: Bun.Subprocess<"pipe", number, "pipe">;
  /** Writes `count` calls for a page of `limit` entries of workdir `w`, ids from 1, and flushes them. */
  requestPages(count: number, limit: number): Promise<void>;
  /** The tool calls the server has dispatched, from its audit log. */
  calls(): number;
  /** Kills the server and closes the FIFO's read end. */
  dispose(): void;
}

/** Starts the server on `config` with its stdout a FIFO made in `dir`; resolves once it logged `startup`. */
export async function startUnreadStdout(config: string, dir: string): Promise<UnreadStdoutServer> {
  const fifo = join(dir, "stdout.fifo");
  Bun.spawnSync(["mkfifo", fifo]);
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const writer = openSync(fifo, constants.O_WRONLY);
  const proc = Bun.spawn([BUN, CLI, "mcp", "--config", config], { cwd: REPO_ROOT, stdin: "pipe", stdout: writer, stderr: "pipe" });
  closeSync(writer);
  let stderr = "";
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stderr) stderr += decoder.decode(chunk, { stream: true });
  })();
  const send = (msg: unknown) => proc.stdin.write(`${JSON.stringify(msg)}\n`);
  const dispose = () => {
    proc.kill("SIGKILL");
    closeSync(reader);
  };
  send(INIT);
  send({ jsonrpc: "2.0", method: "notifications/initialized" });
  await proc.stdin.flush();
  await poll(() => stderr.includes('"startup"'), 10_000, "serverfs mcp's startup line").catch((e) => {
    dispose();
    throw e;
  });
  return {
    proc,
    async requestPages(count, limit) {
      for (let id = 1; id <= count; id++)
        send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "list_directory", arguments: { workdir: "w", limit } } });
      await proc.stdin.flush();
    },
    calls: () => parseAudit(stderr).filter((r) => r["event"] === "tool_call").length,
    dispose,
  };
}
