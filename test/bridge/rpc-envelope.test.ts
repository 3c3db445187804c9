import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type RpcServer, startRpcServer } from "../../src/main/bridge/rpc/server.ts";
import { METHODS } from "../../src/shared/bridge-protocol/methods.ts";
import { ServerFsError } from "../../src/shared/errors.ts";
import { type TempDir, tempDir } from "../helpers/workspace.ts";
import { exchange, heldUntilAbort, protocolHandlers, RawConnection, request } from "./rpc-wire.ts";

const MiB = 1_048_576;
let dir: TempDir;
let socketPath: string;
let server: RpcServer;
let closing = false;
let running = 0;
let maxRunning = 0;

/** Echo handlers for every method; `task.get` takes a few magic task ids to misbehave on purpose. */
async function echo(method: string, params: Record<string, unknown>) {
  return { method, params };
}

async function taskGet(params: { task_id: string }, ctx: { signal: AbortSignal }) {
  const id = params.task_id;
  running++;
  maxRunning = Math.max(maxRunning, running);
  try {
    if (id.startsWith("slow:")) await Bun.sleep(Number(id.slice(5)));
    if (id === "wait") await heldUntilAbort(ctx.signal, 5000);
    if (id === "throw") throw new Error("secret /home/user/boom");
    if (id === "code") throw new ServerFsError("AGENT_TASK_NOT_FOUND", "no such task");
    if (id === "big") return { text: "x".repeat(MiB) };
    if (id === "nonobject") return ["not", "an", "object"];
    return { task_id: id, text: "naïve ✓" };
  } finally {
    running--;
  }
}

beforeAll(async () => {
  dir = tempDir();
  socketPath = join(dir.path, "run", "bridge.sock");
  const handlers = Object.fromEntries(METHODS.map((m) => [m, (p: Record<string, unknown>) => echo(m, p)]));
  server = await startRpcServer({
    socketPath,
    peer: { uid: -1, gid: -1 },
    sharingGid: null,
    handlers: protocolHandlers({ ...handlers, "task.get": taskGet }),
    isClosing: () => closing,
  });
});
afterAll(async () => {
  await server.close();
  dir.remove();
});

const one = async (line: string | Uint8Array) => (await exchange(socketPath, line))[0]!;
const code = async (line: string | Uint8Array) => (await one(line)).error?.code;

describe("framing", () => {
  test("one JSON object per LF-terminated line; a \\r before the LF is tolerated", async () => {
    const [a, b] = await exchange(socketPath, `${request("task.get", { task_id: "t" })}\r`, ` ${request("task.get", { task_id: "u" }, "r2")} `);
    expect(a).toEqual({ request_id: "r1", ok: true, result: { task_id: "t", text: "naïve ✓" } });
    expect(b?.result?.["task_id"]).toBe("u");
  });

  test("bytes that are not valid UTF-8 are INVALID_REQUEST and the connection stays open", async () => {
    const conn = await RawConnection.open(socketPath);
    conn.send(Buffer.concat([Buffer.from('{"protocol_version":1,"request_id":"x\xff'), Buffer.from([0xff, 0xfe]), Buffer.from('"}\n')]));
    conn.send(`${request("task.get", { task_id: "after" })}\n`);
    expect(await conn.next()).toEqual({ request_id: null, ok: false, error: { code: "INVALID_REQUEST", message: expect.any(String) } });
    expect((await conn.next()).result?.["task_id"]).toBe("after");
    conn.close();
  });

  test("a UTF-8 BOM is not JSON whitespace", async () => {
    expect(await code(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`${request("task.get", { task_id: "t" })}\n`)]))).toBe("INVALID_REQUEST");
  });

  test.each([
    ["not JSON", "hello"],
    ["an empty line", ""],
    ["an array", "[1,2]"],
    ["a number", "1"],
    ["a string", '"x"'],
    ["null", "null"],
    ["two objects on one line", `${request("task.get", { task_id: "t" })}{}`],
    ["a NaN literal", '{"protocol_version":NaN,"request_id":"r1","method":"task.get","params":{"task_id":"t"}}'],
    ["an Infinity literal", '{"protocol_version":1,"request_id":"r1","method":"task.events","params":{"task_id":"t","limit":Infinity}}'],
  ])("%s is INVALID_REQUEST with request_id null", async (_, line) => {
    const r = await one(`${line}\n`);
    expect(r).toEqual({ request_id: null, ok: false, error: { code: "INVALID_REQUEST", message: expect.any(String) } });
  });

  test("a repeated key keeps its last value", async () => {
    const r = await one('{"protocol_version":1,"request_id":"r1","method":"task.get","params":{"task_id":"a","task_id":"b"}}\n');
    expect(r.result?.["task_id"]).toBe("b");
  });

  test("a line of exactly 1,048,576 bytes before its LF is accepted", async () => {
    const base = request("task.get", { task_id: "edge" });
    const line = base + " ".repeat(MiB - base.length);
    expect(Buffer.byteLength(line)).toBe(MiB);
    expect((await one(`${line}\n`)).ok).toBe(true);
  });

  test("a terminated line over 1 MiB is answered REQUEST_TOO_LARGE (request_id null), after the lines before it, and closed", async () => {
    const conn = await RawConnection.open(socketPath);
    const base = request("task.get", { task_id: "edge" });
    conn.send(`${request("task.get", { task_id: "first" })}\n${base}${" ".repeat(MiB + 1 - base.length)}\n${request("task.get", { task_id: "never" })}\n`);
    expect((await conn.next()).result?.["task_id"]).toBe("first");
    expect(await conn.next()).toEqual({ request_id: null, ok: false, error: { code: "REQUEST_TOO_LARGE", message: expect.any(String) } });
    expect(await conn.nextLine()).toBeNull();
    expect(await conn.closedWithin(5000)).toBe(true);
  });

  test("an unterminated line is refused as soon as its buffered bytes exceed 1 MiB", async () => {
    const conn = await RawConnection.open(socketPath);
    conn.send(`{"protocol_version":1,"request_id":"r1","method":"task.get","params":{"task_id":"`);
    conn.send("y".repeat(MiB)); // no LF ever follows
    expect((await conn.next()).error?.code).toBe("REQUEST_TOO_LARGE");
    expect(await conn.closedWithin(5000)).toBe(true);
  });

  test("requests sent ahead on one connection are answered one at a time, in order", async () => {
    maxRunning = 0;
    const ids = ["slow:150", "a", "slow:50", "b", ...Array.from({ length: 40 }, (_, i) => `n${i}`)];
    const conn = await RawConnection.open(socketPath);
    conn.send(ids.map((id, i) => `${request("task.get", { task_id: id }, `q${i}`)}\n`).join(""));
    const got: unknown[] = [];
    for (let i = 0; i < ids.length; i++) got.push((await conn.next()).request_id);
    conn.close();
    expect(got).toEqual(ids.map((_, i) => `q${i}`));
    expect(maxRunning).toBe(1);
  });

  test("a long poll blocks only its own connection", async () => {
    const waiting = await RawConnection.open(socketPath);
    waiting.send(`${request("task.get", { task_id: "slow:3000" })}\n`);
    let slowAnswered = false;
    const slow = waiting.next().then((answer) => {
      slowAnswered = true;
      return answer;
    });
    expect((await one(request("task.get", { task_id: "other" }))).ok).toBe(true);
    // answered while the slow call, sent first, still waits
    expect(slowAnswered).toBe(false);
    expect((await slow).ok).toBe(true);
    waiting.close();
  });
});

describe("envelope", () => {
  const valid = { protocol_version: 1, request_id: "r9", method: "task.get", params: { task_id: "t" } };
  const line = (o: Record<string, unknown>) => JSON.stringify(o);
  const without = (k: string) => Object.fromEntries(Object.entries(valid).filter(([key]) => key !== k));

  test("responses are exactly {request_id, ok, result}, compact, non-ASCII written as is, plus LF", async () => {
    const conn = await RawConnection.open(socketPath);
    conn.send(`${line(valid)}\n${line({ ...valid, method: "nope" })}\n`);
    expect(await conn.nextLine()).toBe('{"request_id":"r9","ok":true,"result":{"task_id":"t","text":"naïve ✓"}}');
    expect(await conn.nextLine()).toBe('{"request_id":"r9","ok":false,"error":{"code":"METHOD_NOT_FOUND","message":"unknown method"}}');
    conn.close();
  });

  test.each(["protocol_version", "request_id", "method", "params"])("a missing %s is INVALID_REQUEST", async (key) => {
    const r = await one(`${line(without(key))}\n`);
    expect(r.error?.code).toBe("INVALID_REQUEST");
    expect(r.request_id).toBe(key === "request_id" ? null : "r9");
  });

  test("an extra top-level key is INVALID_REQUEST, the request_id still echoed", async () => {
    expect(await one(`${line({ ...valid, extra: 1 })}\n`)).toMatchObject({ request_id: "r9", error: { code: "INVALID_REQUEST" } });
  });

  test.each([
    ["the string 1", "1"],
    ["true", true],
    ["1.5", 1.5],
    ["null", null],
    ["2^53", 2 ** 53],
  ])("protocol_version %s is INVALID_REQUEST (no coercion)", async (_, version) => {
    expect(await code(`${line({ ...valid, protocol_version: version })}\n`)).toBe("INVALID_REQUEST");
  });

  test.each([2, 0, -1])("protocol_version %p is PROTOCOL_VERSION_UNSUPPORTED", async (version) => {
    expect(await one(`${line({ ...valid, protocol_version: version })}\n`)).toMatchObject({
      request_id: "r9",
      error: { code: "PROTOCOL_VERSION_UNSUPPORTED" },
    });
  });

  test("protocol_version written 1.0 is the number 1", async () => {
    expect((await one(`${line(valid).replace('"protocol_version":1', '"protocol_version":1.0')}\n`)).ok).toBe(true);
  });

  test.each([
    ["an empty string", ""],
    ["a number", 7],
    ["null", null],
  ])("request_id %s is INVALID_REQUEST answered with request_id null", async (_, id) => {
    expect(await one(`${line({ ...valid, request_id: id })}\n`)).toMatchObject({ request_id: null, error: { code: "INVALID_REQUEST" } });
  });

  test("a method that is not a string is INVALID_REQUEST; an unknown name is METHOD_NOT_FOUND", async () => {
    expect(await code(`${line({ ...valid, method: 5 })}\n`)).toBe("INVALID_REQUEST");
    for (const name of ["task.nope", "__proto__", "constructor", "TASK.GET"]) {
      expect(await code(`${line({ ...valid, method: name })}\n`)).toBe("METHOD_NOT_FOUND");
    }
  });

  test("checks run in the envelope order", async () => {
    // key set before version, version before method, method before params
    expect(await code(`${line({ ...valid, protocol_version: 2, extra: 1 })}\n`)).toBe("INVALID_REQUEST");
    expect(await code(`${line({ ...valid, protocol_version: 2, method: "nope" })}\n`)).toBe("PROTOCOL_VERSION_UNSUPPORTED");
    expect(await code(`${line({ ...valid, method: "nope", params: { bad: 1 } })}\n`)).toBe("METHOD_NOT_FOUND");
    expect(await one(`${line({ ...valid, params: { task_id: 5, extra: 1 } })}\n`)).toMatchObject({
      error: { code: "INVALID_REQUEST", message: "unknown key in params" },
    });
  });

  test("an encoded response over 1 MiB is RESPONSE_TOO_LARGE with the same request_id", async () => {
    expect(await one(request("task.get", { task_id: "big" }, "huge"))).toEqual({
      request_id: "huge",
      ok: false,
      error: { code: "RESPONSE_TOO_LARGE", message: expect.any(String) },
    });
  });

  test("a handler's ServerFsError becomes its code and message", async () => {
    expect(await one(request("task.get", { task_id: "code" }))).toEqual({
      request_id: "r1",
      ok: false,
      error: { code: "AGENT_TASK_NOT_FOUND", message: "no such task" },
    });
  });

  test("an unexpected handler failure is BRIDGE_PROTOCOL_ERROR with a generic message; the connection stays usable", async () => {
    const conn = await RawConnection.open(socketPath);
    conn.send(`${request("task.get", { task_id: "throw" })}\n`);
    const r = await conn.next();
    expect(r.error?.code).toBe("BRIDGE_PROTOCOL_ERROR");
    expect(r.error?.message).not.toContain("/home");
    expect(r.error?.message).not.toContain("boom");
    conn.send(`${request("task.get", { task_id: "nonobject" }, "r2")}\n`);
    expect(await conn.next()).toMatchObject({ request_id: "r2", error: { code: "BRIDGE_PROTOCOL_ERROR" } });
    conn.send(`${request("task.get", { task_id: "fine" }, "r3")}\n`);
    expect(await conn.next()).toMatchObject({ request_id: "r3", ok: true });
    conn.close();
  });

  test("once shutdown has begun every request is answered BRIDGE_CLOSED", async () => {
    const conn = await RawConnection.open(socketPath);
    closing = true;
    try {
      conn.send(`${request("task.get", { task_id: "t" }, "late")}\nnot json\n`);
      expect(await conn.next()).toMatchObject({ request_id: "late", ok: false, error: { code: "BRIDGE_CLOSED" } });
      expect(await conn.next()).toMatchObject({ request_id: null, error: { code: "BRIDGE_CLOSED" } });
    } finally {
      closing = false;
      conn.close();
    }
  });
});

describe("parameter rules and the methods key sets", () => {
  /** A minimal valid params object per method, its required keys, and its optional ones. */
  const TABLE: Record<string, { params: Record<string, unknown>; optional: Record<string, unknown> }> = {
    "runtime.list": { params: {}, optional: {} },
    "task.submit": {
      params: { runtime: "fake", workdir: "w", path: "", profile: "review", prompt: "p" },
      optional: { continue_from_task_id: "agt_x", correlation_id: "c", idempotency_key: "k" },
    },
    "task.get": { params: { task_id: "t" }, optional: {} },
    "task.events": { params: { task_id: "t" }, optional: { after_event_id: 3, limit: 5, wait_ms: 10 } },
    "task.result.read": { params: { task_id: "t" }, optional: { offset_bytes: 1, max_bytes: 2 } },
    "task.approval.respond": {
      params: { task_id: "t", request_id: "req_x", decision: "deny" },
      optional: { granted_permission_ids: ["a"], actor: "operator" },
    },
    "task.question.answer": { params: { task_id: "t", request_id: "req_x", answers: [{ any: "shape" }] }, optional: { actor: "operator" } },
    "task.message.send": { params: { task_id: "t", message: "m" }, optional: {} },
    "task.cancel": { params: { task_id: "t" }, optional: { actor: "operator" } },
    "task.list": { params: {}, optional: { status: "running", limit: 7, before_task_id: "agt_y" } },
    "recovery.list": { params: {}, optional: {} },
    "recovery.clear": { params: { slot: 3, confirm: true }, optional: {} },
    "metrics.read": { params: {}, optional: {} },
  };

  test("the table covers every method of the protocol", () => {
    expect(Object.keys(TABLE).sort()).toEqual([...METHODS].sort());
  });

  for (const [method, { params, optional }] of Object.entries(TABLE)) {
    test(`${method}: required and optional keys reach the handler; each missing required key and any unknown key is INVALID_REQUEST`, async () => {
      const lines = [
        request(method, params, "ok1"),
        request(method, { ...params, ...optional }, "ok2"),
        request(method, { ...params, unexpected: 1 }, "unknown"),
        ...Object.keys(params).map((k) => request(method, Object.fromEntries(Object.entries(params).filter(([key]) => key !== k)), `missing-${k}`)),
        request(method, [], "array"),
        request(method, null, "null"),
      ];
      const responses = await exchange(socketPath, ...lines);
      const byId = Object.fromEntries(responses.map((r) => [r.request_id, r]));
      expect(byId["ok1"]?.ok).toBe(true);
      expect(byId["ok2"]?.ok).toBe(true);
      // task.get answers with its own result shape (see taskGet); every other method echoes
      if (method !== "task.get") expect(byId["ok2"]?.result?.["params"]).toMatchObject({ ...params, ...optional });
      for (const id of ["unknown", "array", "null", ...Object.keys(params).map((k) => `missing-${k}`)]) {
        expect(byId[id]?.error?.code).toBe("INVALID_REQUEST");
      }
    });
  }

  const paramsOf = async (method: string, params: unknown) => (await one(request(method, params))).result?.["params"];
  const codeOf = async (method: string, params: unknown) => (await one(request(method, params))).error?.code;

  test("defaults are applied before the handler sees the params", async () => {
    expect(await paramsOf("task.events", { task_id: "t" })).toEqual({ task_id: "t", after_event_id: 0, limit: 100, wait_ms: 0 });
    expect(await paramsOf("task.result.read", { task_id: "t" })).toEqual({ task_id: "t", offset_bytes: 0, max_bytes: 65536 });
    expect(await paramsOf("task.list", {})).toEqual({ status: null, limit: 100, before_task_id: null });
  });

  test('"string|null" params accept null, the same as absent', async () => {
    const submit = { runtime: "fake", workdir: "w", path: "", profile: "review", prompt: "p" };
    const nulls = {
      continue_from_task_id: null,
      correlation_id: null,
      idempotency_key: null,
      model: null,
      effort: null,
      max_budget_usd: null,
      submitter: null,
    };
    expect(await paramsOf("task.submit", { ...submit, ...nulls })).toEqual({ ...submit, ...nulls });
    expect(await paramsOf("task.submit", submit)).toEqual({ ...submit, ...nulls });
    expect(await paramsOf("task.list", { status: null, before_task_id: null })).toMatchObject({ status: null, before_task_id: null });
  });

  test("other optional params may be omitted but not null", async () => {
    expect(await codeOf("task.events", { task_id: "t", limit: null })).toBe("INVALID_REQUEST");
    expect(await codeOf("task.result.read", { task_id: "t", max_bytes: null })).toBe("INVALID_REQUEST");
    expect(await codeOf("task.approval.respond", { task_id: "t", request_id: "r", decision: "deny", granted_permission_ids: null })).toBe("INVALID_REQUEST");
    expect(await codeOf("task.list", { limit: null })).toBe("INVALID_REQUEST");
  });

  test("a value of the wrong JSON type is INVALID_REQUEST", async () => {
    expect(await codeOf("task.get", { task_id: 5 })).toBe("INVALID_REQUEST");
    expect(await codeOf("task.get", { task_id: null })).toBe("INVALID_REQUEST");
    expect(await codeOf("task.submit", { runtime: "fake", workdir: "w", path: "", profile: "review", prompt: "p", correlation_id: 5 })).toBe("INVALID_REQUEST");
    expect(await codeOf("task.approval.respond", { task_id: "t", request_id: "r", decision: "deny", granted_permission_ids: [1] })).toBe("INVALID_REQUEST");
    expect(await codeOf("task.question.answer", { task_id: "t", request_id: "r", answers: {} })).toBe("INVALID_REQUEST");
  });

  test("integers must be safe integers; booleans and strings are never integers", async () => {
    for (const limit of [1.5, 2 ** 53, true, "5", [5]]) expect(await codeOf("task.events", { task_id: "t", limit })).toBe("INVALID_REQUEST");
    for (const confirm of [1, "true", null]) expect(await codeOf("recovery.clear", { slot: 1, confirm })).toBe("INVALID_REQUEST");
  });

  test("range and semantic checks are not protocol errors: they reach the method", async () => {
    expect(await paramsOf("task.events", { task_id: "not-an-id", limit: -1, wait_ms: 999_999 })).toMatchObject({ limit: -1, wait_ms: 999_999 });
    expect(await paramsOf("recovery.clear", { slot: 99, confirm: false })).toEqual({ slot: 99, confirm: false });
    expect(await paramsOf("task.question.answer", { task_id: "t", request_id: "r", answers: [] })).toMatchObject({ answers: [] });
  });
});
