/**
 * The Bridge stays reachable (docs/reliability.md#the-socket-path-stays-reachable): its socket file
 * removed while it runs is bound again with the startup hygiene and logged, something else put at the
 * path is left alone and logged, and a replacement Bridge is refused naming the running one's pid.
 * A real `serverfs bridge`, the socket file removed with `rm`, the path watched by polling.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, lstatSync, rmSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { call } from "../helpers/bridge.ts";
import { poll } from "../helpers/poll.ts";
import { runCli } from "../helpers/process.ts";
import { useBridge } from "../helpers/use-bridge.ts";

const { env, bridge } = useBridge();

const isSocket = (path: string) => existsSync(path) && lstatSync(path).isSocket();

/** A connection opened now and kept: `ask` sends one request line on it and resolves with its answer line. */
async function keptConnection(path: string): Promise<{ ask(method: string): Promise<Record<string, unknown>>; close(): void }> {
  const sock: Socket = connect(path);
  await new Promise<void>((resolve, reject) => {
    sock.once("connect", resolve);
    sock.once("error", reject);
  });
  let buf = "";
  return {
    ask: (method) =>
      new Promise((resolve) => {
        const onData = (d: Buffer) => {
          buf += d.toString("utf8");
          const nl = buf.indexOf("\n");
          if (nl < 0) return;
          sock.off("data", onData);
          resolve(JSON.parse(buf.slice(0, nl)) as Record<string, unknown>);
          buf = buf.slice(nl + 1);
        };
        sock.on("data", onData);
        sock.write(`${JSON.stringify({ protocol_version: 1, request_id: "kept", method, params: {} })}\n`);
      }),
    close: () => sock.destroy(),
  };
}

describe("the socket path stays reachable", () => {
  test("a removed socket file is bound again, logged, and serves; a second Bridge is refused naming the running pid", async () => {
    const before = lstatSync(env.socketPath).ino;
    const kept = await keptConnection(env.socketPath);
    const since = bridge().lines().length;
    rmSync(env.socketPath);
    await poll(() => isSocket(env.socketPath), 20_000, "the socket reappearing at its path");
    expect(lstatSync(env.socketPath).ino).not.toBe(before);
    expect((lstatSync(env.socketPath).mode & 0o777).toString(8)).toBe("600");
    expect(await call(env.socketPath, "runtime.list")).toHaveProperty("runtimes");
    const rebound = await bridge().nextLine("socket_rebound", { since });
    expect(rebound).toMatchObject({ level: "WARN", reason: "missing" });
    // no path in the line: the startup line alone names the socket
    expect(JSON.stringify(rebound)).not.toContain(env.dir.path);
    // a connection opened on the old socket is still served
    expect(await kept.ask("runtime.list")).toMatchObject({ request_id: "kept", ok: true });
    kept.close();

    const second = await runCli(["bridge", "--config", env.configPath]);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`serverfs: BRIDGE_ALREADY_RUNNING: another Bridge (pid ${bridge().proc.pid}) is using this state directory`);
    expect(await call(env.socketPath, "runtime.list")).toHaveProperty("runtimes");
  }, 60_000);

  test("something else put at the path is left alone and logged as an error; once it is gone the socket is bound again", async () => {
    const since = bridge().lines().length;
    rmSync(env.socketPath);
    writeFileSync(env.socketPath, "not a socket\n", { mode: 0o600 });
    const failed = await bridge().nextLine("socket_rebind_failed", { since });
    expect(failed).toMatchObject({ level: "ERROR", reason: "replaced", error_code: "SOCKET_PATH_IN_USE" });
    expect(lstatSync(env.socketPath).isFile()).toBe(true);

    rmSync(env.socketPath);
    await poll(() => isSocket(env.socketPath), 20_000, "the socket reappearing at its path");
    expect(await bridge().nextLine("socket_rebound", { since })).toMatchObject({ reason: "missing" });
    expect(await call(env.socketPath, "runtime.list")).toHaveProperty("runtimes");
    // the failure was told once, however many checks met the file
    expect(
      bridge()
        .lines()
        .filter((l) => l.event === "socket_rebind_failed").length,
    ).toBe(1);
  }, 60_000);

  test("a clean stop still unlinks the socket it bound last", async () => {
    expect(await bridge().stop()).toBe(0);
    expect(existsSync(env.socketPath)).toBe(false);
  }, 30_000);
});
