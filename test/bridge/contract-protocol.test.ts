/**
 * Bridge contract, protocol (docs/bridge-rpc.md#socket-and-framing to docs/bridge-rpc.md#methods) against the real `serverfs bridge` process over its
 * real Unix socket: every malformed-envelope class, the validation order, the method table and the
 * exact result shapes.
 */
import { describe, expect, test } from "bun:test";
import { call, codeOf, isTerminalTask, rpc, submitTask } from "../helpers/bridge.ts";
import { FAKE_RUNTIME_LISTED, TASK_OBJECT_FIELDS } from "../helpers/contract-shapes.ts";
import { useBridge } from "../helpers/use-bridge.ts";
import { exchange, RawConnection, request } from "./rpc-wire.ts";

const { env, sock, waitFor } = useBridge();

const one = async (line: string) => (await exchange(sock, line))[0]!;

/** Submits a review task and waits for it to end (tasks count against max_active_tasks until then). */
async function finished(prompt: string, params: Record<string, unknown> = {}): Promise<string> {
  const r = await submitTask(sock, { prompt, ...params });
  const taskId = r.result!["task_id"] as string;
  await waitFor(taskId, isTerminalTask);
  return taskId;
}
const MISSING = "agt_000000000000000000000000";

describe("framing and the envelope: every malformed class", () => {
  const cases: [string, string, string, string | null][] = [
    ["text that is not JSON", "{oops", "INVALID_REQUEST", null],
    ["a JSON array", "[1,2]", "INVALID_REQUEST", null],
    ["a JSON string", '"task.get"', "INVALID_REQUEST", null],
    ["a NaN literal", '{"protocol_version":NaN,"request_id":"r1","method":"task.get","params":{}}', "INVALID_REQUEST", null],
    ["a missing key (params)", '{"protocol_version":1,"request_id":"r1","method":"runtime.list"}', "INVALID_REQUEST", "r1"],
    ["an extra key", '{"protocol_version":1,"request_id":"r1","method":"runtime.list","params":{},"x":1}', "INVALID_REQUEST", "r1"],
    ['protocol_version as the string "1"', request("runtime.list", {}, "r1", "1"), "INVALID_REQUEST", "r1"],
    ["protocol_version true", request("runtime.list", {}, "r1", true), "INVALID_REQUEST", "r1"],
    ["protocol_version 1.5", request("runtime.list", {}, "r1", 1.5), "INVALID_REQUEST", "r1"],
    ["protocol_version 2", request("runtime.list", {}, "r1", 2), "PROTOCOL_VERSION_UNSUPPORTED", "r1"],
    ["an empty request_id", request("runtime.list", {}, ""), "INVALID_REQUEST", null],
    ["a numeric request_id", request("runtime.list", {}, 7), "INVALID_REQUEST", null],
    ["a method that is not a string", '{"protocol_version":1,"request_id":"r1","method":5,"params":{}}', "INVALID_REQUEST", "r1"],
    ["an unknown method", request("task.explode", {}), "METHOD_NOT_FOUND", "r1"],
    ["params that are an array", request("runtime.list", []), "INVALID_REQUEST", "r1"],
    ["params null", request("runtime.list", null), "INVALID_REQUEST", "r1"],
    ["params with an unknown key", request("task.get", { task_id: MISSING, verbose: true }), "INVALID_REQUEST", "r1"],
    ["params missing a required key", request("task.get", {}), "INVALID_REQUEST", "r1"],
    ["a param of the wrong type", request("task.get", { task_id: 5 }), "INVALID_REQUEST", "r1"],
    ["null for an optional integer param", request("task.events", { task_id: MISSING, limit: null }), "INVALID_REQUEST", "r1"],
    ["a boolean for an integer param", request("task.events", { task_id: MISSING, after_event_id: true }), "INVALID_REQUEST", "r1"],
    ["runtime.list params that are not {}", request("runtime.list", { name: "fake" }), "INVALID_REQUEST", "r1"],
  ];
  for (const [name, line, code, id] of cases) {
    test(`${name} → ${code}, request_id ${id === null ? "null" : "echoed"}`, async () => {
      const r = await one(line);
      expect(r).toEqual({ request_id: id, ok: false, error: { code, message: expect.any(String) } });
    });
  }

  test("a malformed line followed by a valid one on the same connection: both answered, in order", async () => {
    const conn = await RawConnection.open(sock);
    try {
      conn.send(`{not json\n${request("task.get", { task_id: MISSING }, "after")}\n[]\n${request("runtime.list", {}, "last")}\n`);
      expect(codeOf(await conn.next())).toBe("INVALID_REQUEST");
      expect(await conn.next()).toMatchObject({ request_id: "after", ok: false, error: { code: "AGENT_TASK_NOT_FOUND" } });
      expect(codeOf(await conn.next())).toBe("INVALID_REQUEST");
      expect(await conn.next()).toMatchObject({ request_id: "last", ok: true });
    } finally {
      conn.close();
    }
  });

  test("bytes that are not UTF-8 are INVALID_REQUEST and the connection stays open", async () => {
    const conn = await RawConnection.open(sock);
    try {
      conn.send(Buffer.concat([Buffer.from('{"protocol_version":1,"request_id":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}\n')]));
      conn.send(`${request("runtime.list", {}, "ok")}\n`);
      expect(await conn.next()).toMatchObject({ request_id: null, error: { code: "INVALID_REQUEST" } });
      expect(await conn.next()).toMatchObject({ request_id: "ok", ok: true });
    } finally {
      conn.close();
    }
  });

  test("a line of exactly 1 MiB is read; one byte more is REQUEST_TOO_LARGE and the connection is closed", async () => {
    const MiB = 1_048_576;
    const shell = request("task.get", { task_id: "" });
    const exact = request("task.get", { task_id: "x".repeat(MiB - Buffer.byteLength(shell)) });
    expect(Buffer.byteLength(exact)).toBe(MiB);
    expect(codeOf(await one(exact))).toBe("AGENT_TASK_NOT_FOUND");
    const conn = await RawConnection.open(sock);
    try {
      conn.send(`${exact}x`);
      expect(await conn.next()).toMatchObject({ request_id: null, ok: false, error: { code: "REQUEST_TOO_LARGE" } });
      expect(await conn.closedWithin(5_000)).toBe(true);
    } finally {
      conn.close();
    }
  });

  test("JSON whitespace around the object and a \\r before the LF are tolerated; a repeated key keeps its last value", async () => {
    const spaced = await one(`  ${request("runtime.list", {}, "spaced")}\t\r`);
    expect(spaced).toMatchObject({ request_id: "spaced", ok: true });
    const repeated = await one('{"protocol_version":2,"request_id":"first","method":"runtime.list","params":{},"protocol_version":1,"request_id":"last"}');
    expect(repeated).toMatchObject({ request_id: "last", ok: true });
  });

  test("validation order: version before method, method before params", async () => {
    expect(codeOf(await one(request("task.explode", { junk: 1 }, "r1", 2)))).toBe("PROTOCOL_VERSION_UNSUPPORTED");
    expect(codeOf(await one(request("task.explode", { junk: 1 })))).toBe("METHOD_NOT_FOUND");
    expect(codeOf(await one(request("task.get", { task_id: 1, junk: 1 })))).toBe("INVALID_REQUEST");
  });

  test("a response is exactly three keys, compact JSON plus LF, echoing request_id", async () => {
    const conn = await RawConnection.open(sock);
    try {
      conn.send(`${request("runtime.list", {}, "mcp_0123456789abcdef01234567")}\n`);
      const line = (await conn.nextLine())!;
      const parsed = JSON.parse(line) as Record<string, unknown>;
      expect(Object.keys(parsed).sort()).toEqual(["ok", "request_id", "result"]);
      expect(parsed["request_id"]).toBe("mcp_0123456789abcdef01234567");
      expect(line).toBe(JSON.stringify(parsed));
    } finally {
      conn.close();
    }
  });
});

describe("parameter rules", () => {
  test('"string|null" params accept null as absent; other optionals may be omitted', async () => {
    const r = await submitTask(sock, { prompt: "complete:x", continue_from_task_id: null, correlation_id: null, idempotency_key: null });
    expect(r.ok).toBe(true);
    expect(r.result).toMatchObject({ correlation_id: null, idempotency_key: null, status: "queued" });
    const taskId = r.result!["task_id"] as string;
    await waitFor(taskId, isTerminalTask);
    const events = await call(sock, "task.events", { task_id: taskId });
    expect(events["next_after_event_id"]).toEqual(expect.any(Number));
  });

  test("integer params must be safe integers", async () => {
    const r = await rpc(sock, "task.events", { task_id: MISSING, after_event_id: 2 ** 53 });
    expect(codeOf(r)).toBe("INVALID_REQUEST");
    expect(codeOf(await rpc(sock, "task.events", { task_id: MISSING, limit: 1.5 }))).toBe("INVALID_REQUEST");
  });

  test("answers elements are not a protocol matter: a non-object element reaches the method's own checks", async () => {
    const r = await rpc(sock, "task.question.answer", { task_id: MISSING, request_id: "req_000000000000000000000000", answers: [1] });
    expect(codeOf(r)).toBe("AGENT_TASK_NOT_FOUND");
  });
});

describe("methods", () => {
  test("runtime.list lists the enabled fake runtime with every capability", async () => {
    expect(await call(sock, "runtime.list")).toEqual({
      runtimes: [FAKE_RUNTIME_LISTED],
    });
  });

  test("task.submit answers {task_id, status: queued, correlation_id, idempotency_key, replayed: false} at once; a replay says replayed: true", async () => {
    const r = await submitTask(sock, { prompt: "sleep:300:done", correlation_id: "c-1", idempotency_key: "k-submit-shape" });
    expect(Object.keys(r.result!).sort()).toEqual(["correlation_id", "idempotency_key", "replayed", "status", "task_id"]);
    expect(r.result).toMatchObject({ status: "queued", correlation_id: "c-1", idempotency_key: "k-submit-shape", replayed: false });
    const again = await submitTask(sock, { prompt: "sleep:300:done", correlation_id: "c-2", idempotency_key: "k-submit-shape" });
    expect(again.result).toMatchObject({ task_id: r.result!["task_id"], correlation_id: "c-1", replayed: true });
    expect(r.result!["task_id"]).toMatch(/^agt_[0-9a-f]{24}$/);
    await waitFor(r.result!["task_id"] as string, isTerminalTask);
  });

  test("task.get returns exactly the task object and never a native id, process field or prompt", async () => {
    const taskId = await finished("complete:shape");
    const t = await call(sock, "task.get", { task_id: taskId });
    expect(Object.keys(t).sort()).toEqual([...TASK_OBJECT_FIELDS].sort());
    expect(t).toMatchObject({ task_id: taskId, runtime: "fake", workdir_alias: "repo", workdir_slot: 1, relative_cwd: "", profile: "review" });
    expect(t).toMatchObject({ status: "succeeded", final_response: "shape", error_code: null, pending_request: null });
    for (const key of ["created_at", "updated_at", "started_at", "completed_at", "deadline_at"]) {
      expect(t[key]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    }
    const text = JSON.stringify(t);
    expect(text).not.toContain("fake-session-");
    expect(text).not.toContain("fake-turn-");
    expect(text).not.toContain("complete:shape");
    expect(text).not.toContain(env.dir.path);
  });

  test("an id outside the agt_/req_ format is unknown, never a syntax error", async () => {
    for (const id of ["nope", "agt_XYZ", "AGT_000000000000000000000000", MISSING]) {
      expect(codeOf(await rpc(sock, "task.get", { task_id: id }))).toBe("AGENT_TASK_NOT_FOUND");
      expect(codeOf(await rpc(sock, "task.cancel", { task_id: id }))).toBe("AGENT_TASK_NOT_FOUND");
      expect(codeOf(await rpc(sock, "task.events", { task_id: id }))).toBe("AGENT_TASK_NOT_FOUND");
      expect(codeOf(await rpc(sock, "task.result.read", { task_id: id }))).toBe("AGENT_TASK_NOT_FOUND");
    }
    const taskId = await finished("complete:x");
    for (const requestId of ["req_bad", "req_000000000000000000000000"]) {
      const approval = await rpc(sock, "task.approval.respond", { task_id: taskId, request_id: requestId, decision: "deny" });
      expect(codeOf(approval)).toBe("REQUEST_NOT_FOUND");
    }
  });

  test("task.list (operator) pages newest first with next_before_task_id", async () => {
    const ids: string[] = [];
    for (const p of ["complete:l1", "complete:l2", "complete:l3"]) {
      ids.push(await finished(p));
      await Bun.sleep(3); // distinct created_at milliseconds, so the order is by time alone
    }
    const first = await call<{ tasks: { task_id: string }[]; next_before_task_id: string | null }>(sock, "task.list", { limit: 2 });
    expect(first.tasks.map((t) => t.task_id)).toEqual([ids[2]!, ids[1]!]);
    expect(first.next_before_task_id).toBe(ids[1]!);
    const second = await call<{ tasks: { task_id: string }[] }>(sock, "task.list", { limit: 1, before_task_id: first.next_before_task_id });
    expect(second.tasks.map((t) => t.task_id)).toEqual([ids[0]!]);
    expect(codeOf(await rpc(sock, "task.list", { status: "sleeping" }))).toBe("INVALID_REQUEST");
    expect(codeOf(await rpc(sock, "task.list", { limit: 501 }))).toBe("INVALID_LIMIT");
  });
});
