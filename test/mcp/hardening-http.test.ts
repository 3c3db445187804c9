/**
 * Hardening of the HTTP transport (docs/reliability.md, "Hardening: writes, temp files, transfers
 * and HTTP"): never open off loopback by accident, 421 for a request without Host, 400 for a gate
 * header sent twice, and a bounded number of sessions that expire when idle.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { rawRequest, spawnHttpServer, stopHttpServers } from "../helpers/http-server.ts";
import { parseAudit } from "../helpers/mcp-client.ts";
import { runCli } from "../helpers/process.ts";
import { INIT, postJson } from "../helpers/raw-http.ts";
import type { Table } from "../helpers/toml.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

let dir: TempDir;
let workdirs: Table[];

const LIST = { jsonrpc: "2.0", id: 2, method: "tools/list" };

const post = (port: number, body: unknown, session?: string) =>
  postJson(`http://127.0.0.1:${port}/mcp`, body, session ? { "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" } : {});

/** A fresh session: its id, after a successful initialize. */
async function openSession(port: number): Promise<string> {
  const r = await post(port, INIT);
  expect(r.status).toBe(200);
  await r.text();
  return r.headers.get("mcp-session-id")!;
}

const statusOf = async (port: number, session: string) => {
  const r = await post(port, LIST, session);
  await r.text();
  return r.status;
};

/** Sends raw bytes and resolves with everything the server answers before it closes. */
/** Opens a request whose body never completes: its session has a request in flight. */
function hangingRequest(port: number, session: string): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1", () => {
      socket.write(
        `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
          `Mcp-Session-Id: ${session}\r\nMcp-Protocol-Version: 2025-06-18\r\nContent-Length: 1000\r\n\r\n{"jsonrpc":`,
        () => resolve(socket),
      );
    });
  });
}

/**
 * Starts an initialize whose body is not complete yet; `finish()` sends the rest and resolves with
 * the response's status (the connection is closed by the server after it).
 */
function pendingInitialize(port: number): Promise<{ finish(): Promise<number> }> {
  const body = JSON.stringify(INIT);
  const cut = body.length >> 1;
  return new Promise((resolve, reject) => {
    let out = "";
    const socket = connect(port, "127.0.0.1", () => {
      socket.write(
        `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
          `Connection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, cut)}`,
        () =>
          resolve({
            finish: () => {
              socket.write(body.slice(cut));
              return ended;
            },
          }),
      );
    });
    const ended = new Promise<number>((done) => socket.on("end", () => done(Number(out.split(" ")[1]))));
    socket.on("data", (d) => {
      out += d.toString("latin1");
    });
    socket.on("error", reject);
  });
}

beforeAll(() => {
  dir = tempDir();
  workdirs = [{ slot: 1, alias: "repo", path: dir.dir("ws") }];
});
afterAll(() => {
  stopHttpServers();
  dir.remove();
});

describe("HTTP off loopback is never open by accident", () => {
  test("a non-loopback bind without a bearer token is a configuration error naming the fix: exit 2, nothing listens", async () => {
    const config = writeConfig(dir.path, { workdirs }, "open.toml");
    for (const listen of ["0.0.0.0:0", "[::]:0"]) {
      const r = await runCli(["mcp", "--config", config, "--http", listen]);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toContain("serverfs: configuration error: server.http.bearer_token_file: must be set to serve HTTP on the non-loopback address");
      expect(r.stderr).toContain("set a bearer token file or [server.http.oauth], or bind 127.0.0.1");
      expect(parseAudit(r.stderr).find((e) => e["event"] === "startup_failed")?.["level"]).toBe("ERROR");
      expect(parseAudit(r.stderr).some((e) => e["event"] === "startup")).toBe(false);
    }
  });

  test("with a bearer token a non-loopback bind starts and warns on stderr; a loopback bind does not warn", async () => {
    chmodSync(dir.file("token", "tok-123\n"), 0o600);
    const config = writeConfig(dir.path, { server: { http: { bearer_token_file: `${dir.path}/token` } }, workdirs }, "token.toml");
    const open = await spawnHttpServer(config, "0.0.0.0:0");
    try {
      const [warning] = await open.waitFor("http_not_loopback");
      expect(warning!["level"]).toBe("WARN");
      expect(warning!["listen"]).toBe(`0.0.0.0:${open.port}`);
      const r = await fetch(`http://127.0.0.1:${open.port}/mcp`, { method: "POST", body: "{}" });
      expect(r.status).toBe(401);
      expect(open.stderr()).not.toContain("tok-123");
    } finally {
      await open.stop();
    }
    const local = await spawnHttpServer(writeConfig(dir.path, { workdirs }, "local.toml"));
    try {
      expect(parseAudit(local.stderr()).some((e) => e["event"] === "http_not_loopback")).toBe(false);
    } finally {
      await local.stop();
    }
  });

  test("a bearer token file others can reach, or another user's, is a configuration error naming the key and the mode: exit 2, nothing listens", async () => {
    const token = dir.file("loose-token", "tok-loose\n");
    const config = writeConfig(dir.path, { server: { http: { bearer_token_file: token } }, workdirs }, "loose.toml");
    const refusal = async () => {
      const r = await runCli(["mcp", "--config", config, "--http", "127.0.0.1:0"], { killAfterMs: 30_000 });
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(parseAudit(r.stderr).some((e) => e["event"] === "startup")).toBe(false);
      expect(r.stderr).not.toContain("tok-loose");
      return r.stderr.split("\n").find((l) => l.startsWith("serverfs: "));
    };
    for (const mode of [0o644, 0o640, 0o604, 0o620, 0o602]) {
      chmodSync(token, mode);
      expect(await refusal()).toBe(
        `serverfs: configuration error: server.http.bearer_token_file: has mode 0${mode.toString(8)}, so group or others can reach the token; it must be 0600 or stricter (chmod 600 it)`,
      );
    }
    chmodSync(token, 0o600);
    chownSync(token, 65534, 65534);
    expect(await refusal()).toBe(
      `serverfs: configuration error: server.http.bearer_token_file: is owned by uid 65534, not by this user (uid ${process.getuid!()}); it must be this user's own file`,
    );
  });

  test("a request without a Host header gets the contract's 421, like any Host outside the allowlist", async () => {
    const server = await spawnHttpServer(writeConfig(dir.path, { workdirs }, "host.toml"));
    try {
      const body = JSON.stringify(INIT);
      const answer = await rawRequest(
        server.port,
        `POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      );
      expect(answer).toStartWith("HTTP/1.1 421 ");
      expect(answer).toEndWith("\r\n\r\nmisdirected request\n");
      const foreign = await rawRequest(server.port, "POST /mcp HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      expect(foreign).toStartWith("HTTP/1.1 421 ");
      expect(foreign).not.toContain("evil");
    } finally {
      await server.stop();
    }
  });
});

describe("HTTP requests are never ambiguous", () => {
  test("a gate header sent twice is 400 before any check: two Hosts (good first), two Authorizations (good, bad), two Origins, two session ids", async () => {
    chmodSync(dir.file("token-dup", "tok-dup\n"), 0o600);
    const config = writeConfig(dir.path, { server: { http: { bearer_token_file: `${dir.path}/token-dup` } }, workdirs }, "dup.toml");
    const server = await spawnHttpServer(config);
    try {
      const body = JSON.stringify(INIT);
      const host = `Host: 127.0.0.1:${server.port}\r\n`;
      const auth = "Authorization: Bearer tok-dup\r\n";
      const send = (headers: string) =>
        rawRequest(
          server.port,
          `POST /mcp HTTP/1.1\r\n${headers}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
            `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
        );
      // the same request with each header once is served
      expect(await send(host + auth)).toStartWith("HTTP/1.1 200 ");
      for (const headers of [
        `${host}Host: evil.example\r\n${auth}`,
        `${host}${auth}Authorization: Bearer wrong\r\n`,
        `${host}${auth}Origin: http://127.0.0.1:${server.port}\r\nOrigin: https://evil.example\r\n`,
        `${host}${auth}Mcp-Session-Id: one\r\nmcp-session-id: two\r\n`,
      ]) {
        const answer = await send(headers);
        expect(answer).toStartWith("HTTP/1.1 400 ");
        expect(answer).toEndWith("\r\n\r\nambiguous request\n");
        expect(answer).not.toContain("evil");
      }
    } finally {
      await server.stop();
    }
  });
});

describe("HTTP sessions are bounded", () => {
  test("a session idle for http_session_idle_seconds is closed; its id is then unknown (404)", async () => {
    const server = await spawnHttpServer(writeConfig(dir.path, { server: { http_session_idle_seconds: 1 }, workdirs }, "idle.toml"));
    try {
      const id = await openSession(server.port);
      expect(await statusOf(server.port, id)).toBe(200);
      const [closed] = await server.waitFor("http_session_closed");
      expect(closed).toMatchObject({ reason: "idle", sessions: 0 });
      expect(await statusOf(server.port, id)).toBe(404);
      // A new session works as before.
      expect(await statusOf(server.port, await openSession(server.port))).toBe(200);
    } finally {
      await server.stop();
    }
  });

  test("past http_max_sessions the oldest idle session is closed; a busy one never is, and with all busy a new one is refused", async () => {
    const server = await spawnHttpServer(writeConfig(dir.path, { server: { http_max_sessions: 3 }, workdirs }, "cap.toml"));
    const hanging: Socket[] = [];
    try {
      const [a, b, c] = [await openSession(server.port), await openSession(server.port), await openSession(server.port)];
      // a is used again, so b is now the oldest idle session.
      expect(await statusOf(server.port, a)).toBe(200);
      const d = await openSession(server.port);
      expect((await server.waitFor("http_session_closed"))[0]).toMatchObject({ reason: "cap", sessions: 2 });
      expect(await statusOf(server.port, b)).toBe(404);
      for (const live of [a, c, d]) expect(await statusOf(server.port, live)).toBe(200);

      // With a request in flight on each of the three, none may be closed for a fourth.
      for (const live of [a, c, d]) hanging.push(await hangingRequest(server.port, live));
      // One full round trip after the hanging bytes were sent: the server has read them by then.
      expect(await statusOf(server.port, c)).toBe(200);
      const refused = await post(server.port, INIT);
      expect(refused.status).toBe(503);
      expect(await refused.text()).toBe("too many sessions\n");
      for (const live of [a, c, d]) expect(await statusOf(server.port, live)).toBe(200);
    } finally {
      for (const s of hanging) s.destroy();
      await server.stop();
    }
  });

  test("initializations in flight at once count against http_max_sessions: they cannot pass it together", async () => {
    const server = await spawnHttpServer(writeConfig(dir.path, { server: { http_max_sessions: 2 }, workdirs }, "cap-race.toml"));
    try {
      const inits = [await pendingInitialize(server.port), await pendingInitialize(server.port), await pendingInitialize(server.port)];
      // One full round trip after the partial bodies were sent: the server has seen the three requests.
      const probe = await post(server.port, LIST, "no-such-session");
      await probe.text();
      expect(probe.status).toBe(404);
      const statuses = await Promise.all(inits.map((i) => i.finish()));
      expect(statuses.sort()).toEqual([200, 200, 503]);
    } finally {
      await server.stop();
    }
  });
});
