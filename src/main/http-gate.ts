/**
 * The gates an HTTP front of ServerFS puts before any handler, shared by the MCP server's Streamable HTTP
 * (docs/mcp-tools.md#streamable-http) and the operator's console (docs/console.md): the listen address,
 * loopback, the Host allowlist, headers a gate reads at most once, a secret compared in constant time,
 * a secret read from a private file, and fixed plain-text rejections that echo nothing.
 *
 * Offers `ListenAddress`, `parseListen`, `formatHost`, `isLoopback`, `defaultAllowedHosts`,
 * `readPrivateSecret`, `secretMatches`, `reply`, `repeatsHeader`, `header`.
 */
import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { ConfigError, expandHome } from "../shared/config/load.ts";
import { isOwnerOnly, octal, ownUid, PRIVATE_FILE } from "../shared/fs/modes.ts";
import { type RegularFile, readRegularFile } from "../shared/fs/regular-file.ts";
import { UsageError } from "./args.ts";

export interface ListenAddress {
  host: string;
  port: number;
}

/**
 * `127.0.0.1:8000`, `[::1]:8000`, `localhost:8000`, `:8000` or `8000` (the last two bind 127.0.0.1);
 * `flag` names the option in the usage error.
 */
export function parseListen(value: string, flag: string, command?: string): ListenAddress {
  const wrong = () => new UsageError(`${flag} takes HOST:PORT`, command);
  const port = (s: string) => {
    if (!/^\d{1,5}$/.test(s) || Number(s) > 65535) throw wrong();
    return Number(s);
  };
  if (/^\d+$/.test(value)) return { host: "127.0.0.1", port: port(value) };
  const v6 = /^\[([0-9A-Fa-f:.]+)\]:(\d+)$/.exec(value);
  if (v6) return { host: v6[1]!, port: port(v6[2]!) };
  const idx = value.lastIndexOf(":");
  if (idx < 0) throw wrong();
  const host = value.slice(0, idx) || "127.0.0.1";
  if (!/^[A-Za-z0-9.-]+$/.test(host)) throw wrong();
  return { host, port: port(value.slice(idx + 1)) };
}

export const formatHost = (host: string, port: number) => (host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`);

/** `localhost`, `127.0.0.0/8` or `::1` (in any spelling); every other address reaches the network. */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase();
  if (h === "localhost" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)) return true;
  if (!h.includes(":")) return false;
  try {
    return new URL(`http://[${h}]/`).hostname === "[::1]";
  } catch {
    return false;
  }
}

export function defaultAllowedHosts(host: string, port: number): string[] {
  const loopback = [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`];
  return isLoopback(host) ? loopback : [formatHost(host, port), ...loopback];
}

/**
 * A secret from a regular file of this user that nobody else may read or change, as ssh asks of a
 * private key: anyone who can read it holds the access it grants, and anyone who can write it can
 * choose it. `key` is the config key naming the file, for the message; trailing whitespace is dropped.
 */
export function readPrivateSecret(file: string, key: string): string {
  let read: RegularFile;
  try {
    read = readRegularFile(expandHome(file), (kind) => new ConfigError(`${key}: is ${kind}, not a regular file`));
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    throw new ConfigError(`${key}: cannot be read`);
  }
  const { uid, mode } = read.stat;
  if (uid !== ownUid()) throw new ConfigError(`${key}: is owned by uid ${uid}, not by this user (uid ${ownUid()}); it must be this user's own file`);
  if (!isOwnerOnly(mode)) {
    throw new ConfigError(
      `${key}: has mode ${octal(mode)}, so group or others can reach the token; it must be ${octal(PRIVATE_FILE)} or stricter (chmod 600 it)`,
    );
  }
  const secret = read.text.replace(/\s+$/, "");
  if (secret === "") throw new ConfigError(`${key}: is empty`);
  return secret;
}

/** Whether `given` is `expected`, compared in constant time over the expected length, whatever was sent. */
export function secretMatches(given: string | null | undefined, expected: string): boolean {
  const want = Buffer.from(expected);
  const got = Buffer.from(given ?? "");
  const padded = Buffer.alloc(want.length);
  got.copy(padded, 0, 0, Math.min(got.length, want.length));
  return timingSafeEqual(padded, want) && got.length === want.length;
}

/** A fixed plain-text answer; it never echoes a header. */
export function reply(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  const body = `${text}\n`;
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": String(Buffer.byteLength(body)), ...headers });
  res.end(body);
}

/**
 * Whether one of `names` (lower case) occurs more than once (RFC 9112: two Host headers are a 400).
 * Node keeps the first of two `Host` or `Authorization` headers and joins two `Origin` headers, so a
 * request that repeats one would be judged on a value some other reader of it (a proxy, a log) does not see.
 */
export function repeatsHeader(req: IncomingMessage, names: ReadonlySet<string>): boolean {
  const seen = new Set<string>();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!.toLowerCase();
    if (!names.has(name)) continue;
    if (seen.has(name)) return true;
    seen.add(name);
  }
  return false;
}

export const header = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};
