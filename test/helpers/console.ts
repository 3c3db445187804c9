/**
 * One real `serverfs console` process beside a real Bridge: `startConsole(configPath)` spawns it on a free
 * loopback port, reads the URL it prints, and offers `fetch` with or without the session cookie.
 */
import { spawnCli } from "./process.ts";

export interface ConsoleProcess {
  /** The URL the console printed, token included. */
  url: string;
  /** `http://127.0.0.1:PORT`. */
  origin: string;
  /** `serverfs_console=…`, as the first URL's redirect set it. */
  cookie: string;
  /** The CSRF token `/api/session` hands the page. */
  csrf: string;
  /** fetch on the console with the cookie (and, for a POST, the CSRF token and a JSON body). */
  get(path: string, headers?: Record<string, string>): Promise<Response>;
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  stop(): Promise<number>;
}

export async function startConsole(configPath: string, extraArgs: string[] = []): Promise<ConsoleProcess> {
  const proc = spawnCli(["console", "--listen", "127.0.0.1:0", "--config", configPath, ...extraArgs]);
  const reader = proc.stdout.getReader();
  const decoder = new TextDecoder();
  let out = "";
  while (!out.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`serverfs console ended before printing its URL: ${await new Response(proc.stderr).text()}`);
    out += decoder.decode(value, { stream: true });
  }
  reader.releaseLock();
  const url = /open (\S+)/.exec(out)?.[1];
  if (url === undefined) throw new Error(`no URL in ${JSON.stringify(out)}`);
  const origin = new URL(url).origin;
  const first = await fetch(url, { redirect: "manual" });
  const cookie = (first.headers.get("set-cookie") ?? "").split(";")[0]!;
  const get = (path: string, headers: Record<string, string> = {}) => fetch(origin + path, { headers: { cookie, ...headers }, redirect: "manual" });
  const session = (await (await get("/api/session")).json()) as { csrf_token: string };
  return {
    url,
    origin,
    cookie,
    csrf: session.csrf_token,
    get,
    post: (path, body, headers = {}) =>
      fetch(origin + path, {
        method: "POST",
        headers: { cookie, "content-type": "application/json", "x-csrf-token": session.csrf_token, ...headers },
        body: JSON.stringify(body),
      }),
    async stop() {
      proc.kill("SIGTERM");
      return proc.exited;
    },
  };
}
