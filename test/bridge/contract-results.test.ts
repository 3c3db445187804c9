/**
 * Bridge contract, results (docs/task-model.md#execution step 6, docs/task-model.md#results, 9 and 10): the inline /
 * spool / too-large thresholds at their exact byte boundaries, the preview, the private spool file,
 * exact multi-chunk UTF-8 reconstruction with SHA-256, every refusal of `task.result.read`, and the
 * result reader's protocol and MCP schemas. Sizes are built with the fake runtime's `repeat:N:TEXT`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, lstatSync, readFileSync, rmSync, truncateSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../../src/shared/canonical-json.ts";
import { allEvents, call, codeOf, isTerminalTask, rpc } from "../helpers/bridge.ts";
import { errorCode, type McpSession, startStdio, structured } from "../helpers/mcp-client.ts";
import { type Task, useBridge } from "../helpers/use-bridge.ts";
import { RawConnection, request } from "./rpc-wire.ts";

const KiB = 1024;
const MiB = 1024 * KiB;

const { env, sock, submit, waitFor } = useBridge();
let mcp: McpSession;

beforeAll(async () => {
  mcp = await startStdio(env.configPath);
});
afterAll(async () => {
  await mcp.close();
});

/** Runs `repeat:count:piece` as a review task to its end. */
async function repeated(count: number, piece: string, params: Record<string, unknown> = {}): Promise<Task> {
  return waitFor(await submit({ prompt: `repeat:${count}:${piece}`, ...params }), isTerminalTask, 60_000);
}

const spoolFile = (taskId: unknown) => join(env.stateDir, "results", `${String(taskId)}.txt`);

interface Chunk {
  text: string;
  offset_bytes: number;
  next_offset_bytes: number;
  eof: boolean;
  correlation_id: string | null;
}

/**
 * Reads a spooled result from offset 0, following next_offset_bytes until eof, on one connection
 * (one request at a time, as the protocol serves them). Checks each chunk's bounds as it goes.
 */
async function readBack(taskId: string, maxBytes: number): Promise<{ bytes: Buffer; chunks: number }> {
  const conn = await RawConnection.open(sock);
  const parts: Buffer[] = [];
  try {
    for (let offset = 0, n = 0; ; n++) {
      conn.send(`${request("task.result.read", { task_id: taskId, offset_bytes: offset, max_bytes: maxBytes }, `r${n}`)}\n`);
      const r = await conn.next();
      if (!r.ok) throw new Error(`read at ${offset} failed: ${r.error?.code}`);
      const chunk = r.result as unknown as Chunk;
      const bytes = Buffer.from(chunk.text, "utf8");
      if (chunk.offset_bytes !== offset || chunk.next_offset_bytes !== offset + bytes.length || bytes.length > maxBytes) {
        throw new Error(`chunk ${n} breaks the cursor: ${JSON.stringify({ ...chunk, text: bytes.length })}`);
      }
      if (bytes.length === 0 && !chunk.eof) throw new Error(`chunk ${n} is empty before eof`);
      parts.push(bytes);
      offset = chunk.next_offset_bytes;
      if (chunk.eof) return { bytes: Buffer.concat(parts), chunks: n + 1 };
    }
  } finally {
    conn.close();
  }
}

describe("execution step 6 and the result thresholds", () => {
  test("exactly 256 KiB is inline: the full text, its size and SHA-256, not retrievable", async () => {
    const t = await repeated(256 * KiB, "a");
    const text = "a".repeat(256 * KiB);
    expect(t).toMatchObject({ status: "succeeded", final_response: text, final_response_truncated: false });
    expect(t["result"]).toEqual({ storage: "inline", size_bytes: 256 * KiB, sha256: sha256Hex(text), retrievable: false });
    const events = await allEvents(sock, t["task_id"] as string);
    expect(events.map((e) => e.event_type)).toEqual(["task.started", "task.completed"]);
    expect(events[1]!.payload).toEqual({ result_storage: "inline", result_size_bytes: 256 * KiB });
    expect(codeOf(await rpc(sock, "task.result.read", { task_id: t["task_id"] }))).toBe("AGENT_RESULT_NOT_RETRIEVABLE");
    expect(existsSync(spoolFile(t["task_id"]))).toBe(false);
  });

  test("256 KiB + 1 is spooled: a 64 KiB preview, truncated, retrievable, a private spool file, spooled-then-completed events", async () => {
    const t = await repeated(256 * KiB + 1, "a", { correlation_id: "spool-1" });
    const text = "a".repeat(256 * KiB + 1);
    const sha = sha256Hex(text);
    expect(t).toMatchObject({ status: "succeeded", final_response: text.slice(0, 64 * KiB), final_response_truncated: true });
    expect(t["result"]).toEqual({ storage: "spool", size_bytes: 256 * KiB + 1, sha256: sha, retrievable: true });
    const events = await allEvents(sock, t["task_id"] as string);
    expect(events.map((e) => [e.event_type, e.payload])).toEqual([
      ["task.started", { runtime: "fake", model: null, effort: null, max_budget_usd: null }],
      ["task.result_spooled", { size_bytes: 256 * KiB + 1, sha256: sha }],
      ["task.completed", { result_storage: "spool", result_size_bytes: 256 * KiB + 1 }],
    ]);
    const file = spoolFile(t["task_id"]);
    expect(lstatSync(file).mode & 0o7777).toBe(0o600);
    expect(lstatSync(join(env.stateDir, "results")).mode & 0o7777).toBe(0o700);
    expect(sha256Hex(readFileSync(file))).toBe(sha);
  });

  test("the JSON-encoding bound: 87,381 × U+0001 (JSON 524,288 bytes) is inline, 87,382 is spooled", async () => {
    expect(Buffer.byteLength(JSON.stringify("\u0001".repeat(87_381)))).toBe(524_288);
    const inline = await repeated(87_381, "\u0001");
    const spooled = await repeated(87_382, "\u0001");
    expect(inline["result"]).toMatchObject({ storage: "inline", size_bytes: 87_381 });
    expect(inline["final_response"]).toBe("\u0001".repeat(87_381));
    expect(spooled["result"]).toMatchObject({ storage: "spool", size_bytes: 87_382, retrievable: true });
  });

  test("exactly 8 MiB of multi-byte text is spooled and reads back byte for byte in 65,535-byte chunks", async () => {
    const piece = "é€abc";
    expect(Buffer.byteLength(piece)).toBe(8);
    const t = await repeated(MiB, piece);
    const expected = Buffer.from(piece.repeat(MiB), "utf8");
    expect(expected.length).toBe(8 * MiB);
    expect(t["result"]).toEqual({ storage: "spool", size_bytes: 8 * MiB, sha256: sha256Hex(expected), retrievable: true });
    const preview = Buffer.from(t["final_response"] as string, "utf8");
    expect(preview.length).toBeLessThanOrEqual(64 * KiB);
    expect(preview.length).toBeGreaterThan(64 * KiB - 4);
    expect(expected.subarray(0, preview.length).equals(preview)).toBe(true);

    const { bytes, chunks } = await readBack(t["task_id"] as string, 65_535);
    expect(chunks).toBeGreaterThanOrEqual(Math.ceil((8 * MiB) / 65_535));
    expect(bytes.equals(expected)).toBe(true);
    expect(sha256Hex(bytes)).toBe((t["result"] as Task)["sha256"] as string);
  }, 60_000);

  test("8 MiB + 1 fails with AGENT_RESULT_TOO_LARGE and stores nothing", async () => {
    expect(Buffer.byteLength("€".repeat(2_796_203))).toBe(8 * MiB + 1);
    const t = await repeated(2_796_203, "€");
    expect(t).toMatchObject({ status: "failed", error_code: "AGENT_RESULT_TOO_LARGE", final_response: null, final_response_truncated: false });
    expect(t["result"]).toEqual({ storage: "inline", size_bytes: null, sha256: null, retrievable: false });
    expect(existsSync(spoolFile(t["task_id"]))).toBe(false);
    expect((await allEvents(sock, t["task_id"] as string)).at(-1)).toMatchObject({
      event_type: "task.failed",
      payload: { error_code: "AGENT_RESULT_TOO_LARGE" },
    });
    expect(codeOf(await rpc(sock, "task.result.read", { task_id: t["task_id"] }))).toBe("AGENT_RESULT_NOT_RETRIEVABLE");
  }, 60_000);
});

describe("reading a spooled result", () => {
  /** 87,382 × "€": the smallest spooled text of 3-byte characters (262,146 bytes). */
  let euros: Task;
  const EURO_BYTES = 87_382 * 3;

  beforeAll(async () => {
    euros = await repeated(87_382, "€", { correlation_id: "euro" });
  });

  test("the preview is cut back to the last complete character", () => {
    expect(euros["result"]).toMatchObject({ storage: "spool", size_bytes: EURO_BYTES });
    expect(euros["final_response"]).toBe("€".repeat(21_845));
  });

  test("exact multi-chunk UTF-8 reconstruction and SHA-256: 65,535- and 7-byte chunks over 3-byte characters", async () => {
    const expected = Buffer.from("€".repeat(87_382), "utf8");
    const sha = (euros["result"] as Task)["sha256"] as string;
    expect(sha256Hex(expected)).toBe(sha);
    const large = await readBack(euros["task_id"] as string, 65_535);
    expect(large.chunks).toBe(Math.ceil(EURO_BYTES / 65_535));
    expect(large.bytes.equals(expected)).toBe(true);
    // 7 bytes hold two characters and a third's first byte, which every chunk must leave for the next
    const small = await readBack(euros["task_id"] as string, 7);
    expect(small.chunks).toBe(EURO_BYTES / 6);
    expect(small.bytes.equals(expected)).toBe(true);
    expect(sha256Hex(small.bytes)).toBe(sha);
  }, 60_000);

  test("defaults are offset 0 and max_bytes 65,536; the answer has exactly its five keys", async () => {
    const chunk = await call(sock, "task.result.read", { task_id: euros["task_id"] });
    expect(Object.keys(chunk).sort()).toEqual(["correlation_id", "eof", "next_offset_bytes", "offset_bytes", "text"]);
    expect(chunk).toMatchObject({ text: "€".repeat(21_845), offset_bytes: 0, next_offset_bytes: 65_535, eof: false, correlation_id: "euro" });
  });

  test("INVALID_RESULT_OFFSET: negative, inside a character, past the end; at the end: empty text and eof", async () => {
    const id = euros["task_id"];
    for (const offset of [-1, 1, 2, 65_536, EURO_BYTES + 1]) {
      expect([offset, codeOf(await rpc(sock, "task.result.read", { task_id: id, offset_bytes: offset }))]).toEqual([offset, "INVALID_RESULT_OFFSET"]);
    }
    expect(await call(sock, "task.result.read", { task_id: id, offset_bytes: EURO_BYTES })).toEqual({
      text: "",
      offset_bytes: EURO_BYTES,
      next_offset_bytes: EURO_BYTES,
      eof: true,
      correlation_id: "euro",
    });
    expect(await call(sock, "task.result.read", { task_id: id, offset_bytes: EURO_BYTES - 3, max_bytes: 5 })).toMatchObject({
      text: "€",
      next_offset_bytes: EURO_BYTES,
      eof: true,
    });
  });

  test("INVALID_RESULT_LIMIT: max_bytes outside 1..65,536, or too small for the next character", async () => {
    const id = euros["task_id"];
    for (const max of [0, -1, 65_537, 1, 2]) {
      expect([max, codeOf(await rpc(sock, "task.result.read", { task_id: id, max_bytes: max }))]).toEqual([max, "INVALID_RESULT_LIMIT"]);
    }
    // the limit is checked before the offset
    expect(codeOf(await rpc(sock, "task.result.read", { task_id: id, max_bytes: 0, offset_bytes: -1 }))).toBe("INVALID_RESULT_LIMIT");
    expect((await call(sock, "task.result.read", { task_id: id, max_bytes: 3 }))["text"]).toBe("€");
  });

  test("the task and its storage are checked first: unknown task, inline, failed and running tasks", async () => {
    expect(codeOf(await rpc(sock, "task.result.read", { task_id: "agt_000000000000000000000000", max_bytes: 0 }))).toBe("AGENT_TASK_NOT_FOUND");
    const inline = await repeated(3, "x");
    expect(codeOf(await rpc(sock, "task.result.read", { task_id: inline["task_id"], max_bytes: 0, offset_bytes: -1 }))).toBe("AGENT_RESULT_NOT_RETRIEVABLE");
    const failed = await waitFor(await submit({ prompt: "fail:x" }), isTerminalTask);
    expect(codeOf(await rpc(sock, "task.result.read", { task_id: failed["task_id"] }))).toBe("AGENT_RESULT_NOT_RETRIEVABLE");
    const running = await submit({ prompt: "wait:" });
    expect(codeOf(await rpc(sock, "task.result.read", { task_id: running }))).toBe("AGENT_RESULT_NOT_RETRIEVABLE");
    await call(sock, "task.cancel", { task_id: running });
  });

  test("protocol schema of the result reader: the params key set and JSON types are INVALID_REQUEST", async () => {
    const id = euros["task_id"];
    const bad: Record<string, unknown>[] = [
      {},
      { task_id: id, offset: 0 },
      { task_id: id, offset_bytes: "0" },
      { task_id: id, offset_bytes: true },
      { task_id: id, max_bytes: 1.5 },
      { task_id: id, max_bytes: null },
      { task_id: 7 },
    ];
    for (const params of bad) {
      expect([params, codeOf(await rpc(sock, "task.result.read", params))]).toEqual([params, "INVALID_REQUEST"]);
    }
  });

  test("MCP schema of the result reader: read_agent_task_result declares its schema, refuses out-of-range values and relays the same chunks", async () => {
    const { tools } = await mcp.client.listTools();
    const tool = tools.find((t) => t.name === "read_agent_task_result");
    expect(tool?.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false, idempotentHint: true });
    const props = tool?.inputSchema.properties as Record<string, Record<string, unknown>>;
    expect(tool?.inputSchema.required).toEqual(["task_id"]);
    expect(Object.keys(props).sort()).toEqual(["max_bytes", "offset_bytes", "task_id"]);
    expect(props["offset_bytes"]).toMatchObject({ minimum: 0 });
    expect(props["max_bytes"]).toMatchObject({ minimum: 1, maximum: 65_536 });

    const id = euros["task_id"] as string;
    for (const args of [
      { task_id: id, max_bytes: 0 },
      { task_id: id, max_bytes: 65_537 },
      { task_id: id, offset_bytes: -1 },
      { task_id: id, extra: 1 },
    ]) {
      expect(errorCode(await mcp.call("read_agent_task_result", args))).toBe("INVALID_ARGUMENT");
    }
    expect(errorCode(await mcp.call("read_agent_task_result", { task_id: id, offset_bytes: 1 }))).toBe("INVALID_RESULT_OFFSET");
    const viaMcp = structured(await mcp.call("read_agent_task_result", { task_id: id, offset_bytes: 6, max_bytes: 7 }));
    expect(viaMcp).toEqual(await call(sock, "task.result.read", { task_id: id, offset_bytes: 6, max_bytes: 7 }));
    expect(viaMcp).toMatchObject({ text: "€€", offset_bytes: 6, next_offset_bytes: 12, eof: false, correlation_id: "euro" });
  });
});

describe("the spool write to result reads the spool file and its directory", () => {
  test("a missing spool file is AGENT_RESULT_NOT_RETRIEVABLE; one not private or of the wrong size is AGENT_RESULT_STORAGE_ERROR", async () => {
    const [gone, open, cut] = [await repeated(256 * KiB + 1, "g"), await repeated(256 * KiB + 1, "o"), await repeated(256 * KiB + 1, "c")];
    rmSync(spoolFile(gone["task_id"]));
    chmodSync(spoolFile(open["task_id"]), 0o644);
    truncateSync(spoolFile(cut["task_id"]), 256 * KiB);
    expect(codeOf(await rpc(sock, "task.result.read", { task_id: gone["task_id"] }))).toBe("AGENT_RESULT_NOT_RETRIEVABLE");
    expect(codeOf(await rpc(sock, "task.result.read", { task_id: open["task_id"] }))).toBe("AGENT_RESULT_STORAGE_ERROR");
    expect(codeOf(await rpc(sock, "task.result.read", { task_id: cut["task_id"] }))).toBe("AGENT_RESULT_STORAGE_ERROR");
  });

  test("a results directory that is not private fails a spooled result with AGENT_RESULT_STORAGE_ERROR", async () => {
    const results = join(env.stateDir, "results");
    const before = await repeated(256 * KiB + 1, "b");
    chmodSync(results, 0o755);
    try {
      const t = await repeated(256 * KiB + 1, "x");
      expect(t).toMatchObject({ status: "failed", error_code: "AGENT_RESULT_STORAGE_ERROR", final_response: null });
      expect(t["result"]).toMatchObject({ storage: "inline", size_bytes: null });
      expect(codeOf(await rpc(sock, "task.result.read", { task_id: before["task_id"] }))).toBe("AGENT_RESULT_STORAGE_ERROR");
      expect(await repeated(3, "x")).toMatchObject({ status: "succeeded", final_response: "xxx" });
    } finally {
      chmodSync(results, 0o700);
    }
    expect(await repeated(256 * KiB + 1, "y")).toMatchObject({ status: "succeeded", result: { storage: "spool" } });
  });
});
