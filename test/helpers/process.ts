/** Spawning `serverfs` subcommands as real processes and reading their output. */
import { REPO_ROOT, SERVERFS } from "./workspace.ts";

export function spawnCli(args: string[], opts: { env?: Record<string, string> } = {}) {
  return Bun.spawn([...SERVERFS, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...opts.env },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
}

export function runCli(args: string[], opts: { env?: Record<string, string>; killAfterMs?: number } = {}) {
  return runToEnd([...SERVERFS, ...args], { cwd: REPO_ROOT, ...opts });
}

/** Runs `argv` to its end, with `env` over this process's; past `killAfterMs` it is killed (SIGKILL) so a hung CLI fails its test. */
export async function runToEnd(argv: string[], opts: { cwd: string; env?: Record<string, string>; killAfterMs?: number }) {
  const proc = Bun.spawn(argv, {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = opts.killAfterMs === undefined ? undefined : setTimeout(() => proc.kill("SIGKILL"), opts.killAfterMs);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { stdout, stderr, code };
}

/** Resolves with the first stderr JSON line whose `event` matches. */
export async function waitForAuditEvent(stderr: ReadableStream<Uint8Array>, event: string, timeoutMs = 10_000) {
  const reader = stderr.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const deadline = Date.now() + timeoutMs;
  try {
    while (Date.now() < deadline) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      for (const line of buffer.split("\n")) {
        if (!line.startsWith("{")) continue;
        const record = JSON.parse(line) as Record<string, unknown>;
        if (record["event"] === event) return record;
      }
    }
  } finally {
    reader.releaseLock();
  }
  throw new Error(`no ${event} audit event`);
}

export interface Collected {
  /** Everything read so far. */
  text(): string;
  /** Resolves with everything read once the stream has ended. */
  ended: Promise<string>;
}

/** Reads `stream` to its end in the background, so a test can wait for what it has said so far with `poll`. */
export function collect(stream: ReadableStream<Uint8Array>): Collected {
  let text = "";
  const decoder = new TextDecoder();
  const ended = (async () => {
    for await (const chunk of stream) text += decoder.decode(chunk, { stream: true });
    return text;
  })();
  return { text: () => text, ended };
}
