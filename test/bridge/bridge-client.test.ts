import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type RpcServer, startRpcServer } from "../../src/main/bridge/rpc/server.ts";
import { BridgeClient, knownHostPaths } from "../../src/shared/bridge-protocol/client.ts";
import { buildConfig } from "../../src/shared/config/load.ts";
import { RelayedError, ServerFsError } from "../../src/shared/errors.ts";
import { holdsWithin } from "../helpers/poll.ts";
import { BUN, REPO_ROOT, type TempDir, tempDir } from "../helpers/workspace.ts";
import { type FakeAnswer, fakeBridge } from "./rpc-wire.ts";

const MiB = 1_048_576;
let dir: TempDir;
let bridgePath: string;
let bridge: RpcServer;
let n = 0;

const SECRET_ROOT = "/srv/secret-root";

/** A task object as task.get answers it (docs/task-model.md#the-task-object). */
const task = (taskId: string) => ({
  task_id: taskId,
  runtime: "fake",
  profile: "review",
  workdir_alias: "w",
  workdir_slot: 1,
  relative_cwd: "",
  status: "queued" as const,
  created_at: "2026-01-01T00:00:00.000Z",
  updated_at: "2026-01-01T00:00:00.000Z",
  started_at: null,
  completed_at: null,
  deadline_at: "2026-01-01T01:00:00.000Z",
  continue_from_task_id: null,
  correlation_id: null,
  idempotency_key: null,
  final_response: null,
  final_response_truncated: false,
  result: { storage: "inline" as const, size_bytes: null, sha256: null, retrievable: false },
  manifest: null,
  manifest_sha256: null,
  error_code: null,
  error_message: null,
  pending_request_id: null,
  pending_request: null,
});

/** A result each method's schema accepts, for fakes that answer whatever is asked. */
const FITTING: Record<string, unknown> = {
  "runtime.list": { runtimes: [] },
  "task.events": { correlation_id: null, events: [], next_after_event_id: 0, last_event_id: 0 },
};

beforeAll(async () => {
  dir = tempDir("serverfs-client-");
  bridgePath = join(dir.path, "run", "bridge.sock");
  bridge = await startRpcServer({
    socketPath: bridgePath,
    peer: { uid: -1, gid: -1 },
    sharingGid: null,
    handlers: {
      "task.get": async (p) => {
        if (p.task_id === "leak") throw new ServerFsError("AGENT_PROVIDER_ERROR", `failed in ${SECRET_ROOT}/src`);
        if (p.task_id === "missing") throw new ServerFsError("AGENT_TASK_NOT_FOUND", "no such task");
        return task(p.task_id);
      },
    },
    isClosing: () => false,
  });
});
afterAll(async () => {
  await bridge.close();
  dir.remove();
});

const client = (socketPath = bridgePath, timeoutMs = 5000, knownPaths: string[] = [SECRET_ROOT]) => new BridgeClient({ socketPath, timeoutMs, knownPaths });

async function failure(p: Promise<unknown>): Promise<ServerFsError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ServerFsError) return e;
    throw e;
  }
  throw new Error("the call succeeded");
}

/** Starts a fake Bridge answering with `answer`, runs `body` against it, and stops it. */
async function withFake<T>(answer: FakeAnswer, body: (socketPath: string) => Promise<T>): Promise<T> {
  const socketPath = join(dir.path, `fake${++n}.sock`);
  const fake = await fakeBridge(socketPath, answer);
  try {
    return await body(socketPath);
  } finally {
    await fake.close();
  }
}

/** The request_id of a request line, to build a response that echoes it. */
const idOf = (line: string) => (JSON.parse(line) as { request_id: string }).request_id;

describe("wire format", () => {
  test("one fresh connection per call carrying exactly one request line, closed after the response", async () => {
    const socketPath = join(dir.path, `fake${++n}.sock`);
    const fake = await fakeBridge(socketPath, (line) => ({
      bytes: `${JSON.stringify({ request_id: idOf(line), ok: true, result: FITTING[(JSON.parse(line) as { method: string }).method] })}\n`,
    }));
    try {
      await client(socketPath).call("task.events", { task_id: "agt_1", after_event_id: 0, limit: 100 });
      await client(socketPath).call("runtime.list", {});
      expect(fake.connections).toBe(2);
      expect(fake.received[0]).toMatch(
        /^\{"protocol_version":1,"request_id":"mcp_[0-9a-f]{24}","method":"task.events","params":\{"task_id":"agt_1","after_event_id":0,"limit":100\}\}\n$/,
      );
      expect(fake.received[1]).toMatch(/^\{"protocol_version":1,"request_id":"mcp_[0-9a-f]{24}","method":"runtime.list","params":\{\}\}\n$/);
      expect(idOf(fake.received[0]!)).not.toBe(idOf(fake.received[1]!));
      await holdsWithin(() => fake.clientEnds >= 2, 5000);
      expect(fake.clientEnds).toBe(2);
    } finally {
      await fake.close();
    }
  });

  test("against the real server: the result comes back as sent", async () => {
    expect(await client().call("task.get", { task_id: "agt_x" })).toEqual(task("agt_x"));
  });

  test("an encoded request over 1 MiB is not sent: REQUEST_TOO_LARGE", async () => {
    const socketPath = join(dir.path, `fake${++n}.sock`);
    const fake = await fakeBridge(socketPath, () => ({ bytes: null }));
    try {
      const e = await failure(client(socketPath).call("task.message.send", { task_id: "t", message: "m".repeat(MiB) }));
      expect(e.code).toBe("REQUEST_TOO_LARGE");
      expect(fake.connections).toBe(0);
    } finally {
      await fake.close();
    }
  });

  test("every result is checked against its method's schema: fields it does not know are kept, a missing or mistyped one is refused", async () => {
    const answering = (result: unknown) => (line: string) => ({ bytes: `${JSON.stringify({ request_id: idOf(line), ok: true, result })}\n` });
    const runtimes = [{ name: "codex", available: false }];
    await withFake(answering({ runtimes, added_later: { x: 1 } }), async (socketPath) => {
      expect(await client(socketPath).call("runtime.list", {})).toEqual({ runtimes, added_later: { x: 1 } });
    });
    for (const wrong of [{}, { runtimes: [{ name: "codex" }] }, { runtimes: [{ name: 5, available: true }] }, { runtimes: "none" }]) {
      await withFake(answering(wrong), async (socketPath) => {
        const e = await failure(client(socketPath).call("runtime.list", {}));
        expect(e.code).toBe("AGENT_BRIDGE_PROTOCOL_ERROR");
        expect(e.message).toBe("the Bridge's result does not have the expected shape");
      });
    }
  });
});

describe("Bridge errors pass through", () => {
  test("a Bridge error becomes CODE: message verbatim", async () => {
    const e = await failure(client().call("task.get", { task_id: "missing" }));
    expect(e).toBeInstanceOf(RelayedError);
    expect(e.code).toBe("AGENT_TASK_NOT_FOUND");
    expect(e.toText()).toBe("AGENT_TASK_NOT_FOUND: no such task");
  });

  test("a code this build does not list still passes through verbatim", async () => {
    await withFake(
      (line) => ({ bytes: `{"request_id":"${idOf(line)}","ok":false,"error":{"code":"SOME_FUTURE_CODE","message":"new"}}\n` }),
      async (socketPath) => {
        const e = await failure(client(socketPath).call("task.get", { task_id: "t" }));
        expect(e.toText()).toBe("SOME_FUTURE_CODE: new");
        expect((e as RelayedError).relayedCode).toBe("SOME_FUTURE_CODE");
      },
    );
  });

  test("safety net: a message naming a known absolute path is replaced, the code kept", async () => {
    const e = await failure(client(bridgePath, 5000, [`${SECRET_ROOT}/`]).call("task.get", { task_id: "leak" }));
    expect(e.code).toBe("AGENT_PROVIDER_ERROR");
    expect(e.message).not.toContain(SECRET_ROOT);
    expect(e.message.length).toBeGreaterThan(0);
    const unguarded = await failure(client(bridgePath, 5000, []).call("task.get", { task_id: "leak" }));
    expect(unguarded.message).toContain(SECRET_ROOT);
  });

  test("the safety net covers every path the config names", () => {
    const root = dir.dir("ws");
    const mcpRoot = dir.dir("ws-mcp");
    const config = buildConfig(
      {
        workdirs: [{ slot: 1, alias: "w", path: root, mcp_path: mcpRoot }],
        bridge: {
          socket_path: "/run/b/bridge.sock",
          state_dir: "/var/state",
          lock_dir: "/var/locks",
          mcp_socket_path: "/mnt/b.sock",
          mcp_lock_dir: "/mnt/locks",
        },
      },
      "test",
      { role: "mcp", env: {} },
    );
    expect(knownHostPaths(config)).toEqual(
      expect.arrayContaining([root, mcpRoot, "/run/b/bridge.sock", "/mnt/b.sock", "/var/state", "/var/locks", "/mnt/locks"]),
    );
  });

  test("PEER_NOT_AUTHORIZED (request_id null) reaches the caller as itself", async () => {
    const p = join(dir.path, `peer${++n}`, "bridge.sock");
    const strict = await startRpcServer({
      socketPath: p,
      peer: { uid: process.getuid!() + 1, gid: -1 },
      sharingGid: null,
      handlers: {},
      isClosing: () => false,
    });
    try {
      expect((await failure(client(p).call("task.get", { task_id: "t" }))).code).toBe("PEER_NOT_AUTHORIZED");
    } finally {
      await strict.close();
    }
  });
});

describe("client-side error mapping", () => {
  test("no socket at the path is AGENT_BRIDGE_UNAVAILABLE", async () => {
    expect((await failure(client(join(dir.path, "absent.sock")).call("runtime.list", {}))).code).toBe("AGENT_BRIDGE_UNAVAILABLE");
  });

  test("a path that is not a socket is AGENT_BRIDGE_UNAVAILABLE", async () => {
    expect((await failure(client(dir.file("plain.txt", "x")).call("runtime.list", {}))).code).toBe("AGENT_BRIDGE_UNAVAILABLE");
  });

  test("no answer within the timeout is AGENT_BRIDGE_UNAVAILABLE, on time", async () => {
    await withFake(
      () => ({ bytes: null }),
      async (socketPath) => {
        // on time: a call with four times the timeout, started at the same moment, is still waiting
        // when it ends (its bound, not any other, ended it)
        let longerEnded = false;
        const longer = failure(client(socketPath, 1200).call("runtime.list", {})).then((e) => {
          longerEnded = true;
          return e;
        });
        const started = Date.now();
        expect((await failure(client(socketPath, 300).call("runtime.list", {}))).code).toBe("AGENT_BRIDGE_UNAVAILABLE");
        expect(Date.now() - started).toBeGreaterThanOrEqual(250);
        expect(longerEnded).toBe(false);
        expect((await longer).code).toBe("AGENT_BRIDGE_UNAVAILABLE");
        expect(Date.now() - started).toBeGreaterThanOrEqual(1150);
      },
    );
  });

  test("extraTimeoutMs extends the bound (read_agent_task_events adds wait_ms)", async () => {
    await withFake(
      (line) => ({ bytes: `{"request_id":"${idOf(line)}","ok":true,"result":{"runtimes":[],"late":true}}\n`, delayMs: 600 }),
      async (socketPath) => {
        expect((await failure(client(socketPath, 300).call("runtime.list", {}))).code).toBe("AGENT_BRIDGE_UNAVAILABLE");
        expect(await client(socketPath, 300).call("runtime.list", {}, { extraTimeoutMs: 2000 })).toEqual({ runtimes: [], late: true });
      },
    );
  });

  test("aborting the caller's signal ends the call at once: AGENT_BRIDGE_UNAVAILABLE", async () => {
    await withFake(
      () => ({ bytes: null }),
      async (socketPath) => {
        const TIMEOUT_MS = 20_000;
        const ac = new AbortController();
        setTimeout(() => ac.abort(), 100);
        const started = Date.now();
        expect((await failure(client(socketPath, TIMEOUT_MS).call("runtime.list", {}, { signal: ac.signal }))).code).toBe("AGENT_BRIDGE_UNAVAILABLE");
        // the abort ended it, long before its own timeout could have
        expect(Date.now() - started).toBeLessThan(TIMEOUT_MS / 2);
      },
    );
  });

  test("the Bridge closing without a byte is AGENT_BRIDGE_UNAVAILABLE", async () => {
    await withFake(
      () => ({ bytes: null, close: true }),
      async (socketPath) => {
        expect((await failure(client(socketPath).call("runtime.list", {}))).code).toBe("AGENT_BRIDGE_UNAVAILABLE");
      },
    );
  });

  const ok = (id: string, result: string) => `{"request_id":"${id}","ok":true,"result":${result}}\n`;
  /** Each row: the condition, the response that shows it, and a fragment of the message naming it. */
  const MALFORMED: [string, (id: string) => { bytes: string | Uint8Array; close?: boolean }, string][] = [
    ["not JSON", () => ({ bytes: "hello\n" }), "one line of JSON"],
    ["a NaN literal", (id) => ({ bytes: ok(id, '{"x":NaN}') }), "one line of JSON"],
    ["invalid UTF-8", (id) => ({ bytes: Buffer.concat([Buffer.from(ok(id, '{"x":"').trimEnd()), Buffer.from([0xff]), Buffer.from('"}}\n')]) }), "UTF-8"],
    ["a partial line, then the close", (id) => ({ bytes: ok(id, "{}").slice(0, 20), close: true }), "one line of JSON"],
    ["not a JSON object", () => ({ bytes: "[1]\n" }), "not a JSON object"],
    ["over 1 MiB", (id) => ({ bytes: ok(id, JSON.stringify({ x: "y".repeat(MiB) })) }), "over 1 MiB"],
    ["over 1 MiB without any LF", () => ({ bytes: "z".repeat(MiB + 10) }), "over 1 MiB"],
    ["an extra top-level key", (id) => ({ bytes: `{"request_id":"${id}","ok":true,"result":{},"extra":1}\n` }), "key set"],
    ["no result", (id) => ({ bytes: `{"request_id":"${id}","ok":true}\n` }), "key set"],
    ["both result and error", (id) => ({ bytes: `{"request_id":"${id}","ok":true,"result":{},"error":{"code":"X_Y","message":"m"}}\n` }), "key set"],
    ["another request_id", () => ({ bytes: ok("mcp_000000000000000000000000", "{}") }), "another request"],
    ["a null request_id on success", () => ({ bytes: '{"request_id":null,"ok":true,"result":{}}\n' }), "another request"],
    ["ok not a boolean", (id) => ({ bytes: `{"request_id":"${id}","ok":"true","result":{}}\n` }), "ok is not a boolean"],
    ["ok false with a result", (id) => ({ bytes: `{"request_id":"${id}","ok":false,"result":{}}\n` }), "key set"],
    ["ok true with an error", (id) => ({ bytes: `{"request_id":"${id}","ok":true,"error":{"code":"X_Y","message":"m"}}\n` }), "key set"],
    ["a result that is an array", (id) => ({ bytes: ok(id, "[]") }), "result is not an object"],
    ["a result that is null", (id) => ({ bytes: ok(id, "null") }), "result is not an object"],
    ["an error code that is not a string", (id) => ({ bytes: `{"request_id":"${id}","ok":false,"error":{"code":5,"message":"m"}}\n` }), "error is malformed"],
    ["an error without a message", (id) => ({ bytes: `{"request_id":"${id}","ok":false,"error":{"code":"X_Y"}}\n` }), "error is malformed"],
    ["an error with an extra key", (id) => ({ bytes: `{"request_id":"${id}","ok":false,"error":{"code":"X_Y","message":"m","x":1}}\n` }), "error is malformed"],
    ["an error that is a string", (id) => ({ bytes: `{"request_id":"${id}","ok":false,"error":"X_Y"}\n` }), "error is malformed"],
    [
      "a code not matching ^[A-Z][A-Z0-9_]{2,}$",
      (id) => ({ bytes: `{"request_id":"${id}","ok":false,"error":{"code":"bad_code","message":"m"}}\n` }),
      "code is malformed",
    ],
    ["a two-letter code", (id) => ({ bytes: `{"request_id":"${id}","ok":false,"error":{"code":"AB","message":"m"}}\n` }), "code is malformed"],
  ];

  test.each(MALFORMED)("a response with %s is AGENT_BRIDGE_PROTOCOL_ERROR", async (_, build, fragment) => {
    await withFake(
      (line) => build(idOf(line)),
      async (socketPath) => {
        const e = await failure(client(socketPath).call("runtime.list", {}));
        expect(e.code).toBe("AGENT_BRIDGE_PROTOCOL_ERROR");
        expect(e.message).toContain(fragment);
      },
    );
  });

  test("a well-formed response with a CRLF ending is accepted", async () => {
    await withFake(
      (line) => ({ bytes: `{"request_id":"${idOf(line)}","ok":true,"result":{"runtimes":[],"a":1}}\r\n` }),
      async (socketPath) => {
        expect(await client(socketPath).call("runtime.list", {})).toEqual({ runtimes: [], a: 1 });
      },
    );
  });
});

describe("a wait never delays process exit", () => {
  test("a process with a call in flight exits as soon as its other work is done", async () => {
    await withFake(
      () => ({ bytes: null }),
      async (socketPath) => {
        const script = `
          import { BridgeClient } from ${JSON.stringify(join(REPO_ROOT, "src/shared/bridge-protocol/client.ts"))};
          new BridgeClient({ socketPath: ${JSON.stringify(socketPath)}, timeoutMs: 30000, knownPaths: [] })
            .call("task.events", { task_id: "t", wait_ms: 25000 }, { extraTimeoutMs: 25000 })
            .catch(() => undefined);
          setTimeout(() => console.log("done"), 200);
        `;
        // the call would otherwise wait 25 s (plus 30): a child still there at half of that is stuck
        const child = Bun.spawn([BUN, "-e", script], { stdout: "pipe", stderr: "pipe" });
        const exit = await Promise.race([child.exited, Bun.sleep(12_500).then(() => "stuck")]);
        if (exit === "stuck") child.kill("SIGKILL");
        expect(exit).toBe(0);
        expect(await new Response(child.stdout).text()).toBe("done\n");
      },
    );
  });
});
