/** `serverfs mcp --http` as a real process, with its audit log read as it is written. */
import { connect, createServer } from "node:net";
import { parseAudit } from "./mcp-client.ts";
import { poll } from "./poll.ts";
import { collect, spawnCli } from "./process.ts";

export interface HttpServer {
  port: number;
  stderr(): string;
  /** Resolves once the audit log holds `count` records of `event`. */
  waitFor(event: string, count?: number): Promise<Record<string, unknown>[]>;
  stop(): Promise<void>;
}

const running = new Set<ReturnType<typeof spawnCli>>();

export async function spawnHttpServer(configPath: string, listen = "127.0.0.1:0"): Promise<HttpServer> {
  const proc = spawnCli(["mcp", "--config", configPath, "--http", listen]);
  running.add(proc);
  const err = collect(proc.stderr);
  const waitFor = async (event: string, count = 1) => {
    const found = () => parseAudit(err.text()).filter((r) => r["event"] === event);
    await poll(() => found().length >= count, 15_000, `${count} ${event} audit event(s)`);
    return found();
  };
  const [startup] = await waitFor("startup");
  const port = Number(String(startup!["listen"]).split(":").pop());
  return {
    port,
    stderr: () => err.text(),
    waitFor,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
      running.delete(proc);
    },
  };
}

/** Kills every server still running (a test's afterAll). */
export function stopHttpServers(): void {
  for (const proc of running) proc.kill();
}

/** Sends `bytes` as they are (no client to fold or fix headers) and resolves with the whole answer. */
export function rawRequest(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(bytes));
    let out = "";
    socket.on("data", (d) => {
      out += d.toString("latin1");
    });
    socket.on("end", () => resolve(out));
    socket.on("error", reject);
  });
}

/** A free loopback port: the resource URL names it before the server listens on it. */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", () => resolve()));
  const address = probe.address();
  const port = typeof address === "object" && address ? address.port : 0;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
