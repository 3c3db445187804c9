/**
 * Long provider lines through a real Bridge (docs/runtimes.md#process-model, docs/reliability.md "The
 * Bridge under faults"): a line just under the 64 MiB cap costs the Bridge about its size once, not
 * nine times, and what it carries arrives intact — the event's 32 KiB prefix, an 8 MiB result read
 * back byte for byte — while a line over the cap, or one nested 100,000 deep, still fails the task.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { sha256Hex } from "../../src/shared/canonical-json.ts";
import {
  allEvents,
  type BridgeEnv,
  type BridgeProcess,
  bridgeEnv,
  call,
  isTerminalTask,
  startBridgeProcess,
  submitTask,
  waitForTask,
} from "../helpers/bridge.ts";

const MiB = 1024 * 1024;
/** The provider's line around an `agent_message` text (its newline not counted). */
const EVENT_FRAME = '{"type":"agent_message","text":""}'.length;

let env: BridgeEnv;
let bridge: BridgeProcess;

/** VmHWM (peak resident memory) of the Bridge process, in bytes. */
function peakRssBytes(pid: number): number {
  const kib = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  if (kib === undefined) throw new Error("no VmHWM");
  return Number(kib) * 1024;
}

async function finished(prompt: string): Promise<Record<string, unknown>> {
  const r = await submitTask(env.socketPath, { prompt });
  if (!r.ok) throw new Error(`submit failed: ${r.error?.code}`);
  return waitForTask(env.socketPath, r.result!["task_id"] as string, isTerminalTask, 180_000);
}

async function readResult(taskId: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (let offset = 0; ; ) {
    const chunk = await call<{ text: string; next_offset_bytes: number; eof: boolean }>(env.socketPath, "task.result.read", {
      task_id: taskId,
      offset_bytes: offset,
      max_bytes: 65_536,
    });
    parts.push(Buffer.from(chunk.text, "utf8"));
    offset = chunk.next_offset_bytes;
    if (chunk.eof) return Buffer.concat(parts);
  }
}

beforeAll(async () => {
  env = bridgeEnv();
  bridge = await startBridgeProcess(env);
});
afterAll(async () => {
  await bridge.stop();
  env.dir.remove();
});

describe("long provider lines", () => {
  test("a 60 MiB event line and a 36 MiB line holding an 8 MiB result: intact, and the Bridge's peak stays under its start peak + 3 × the line", async () => {
    const pid = bridge.proc.pid;
    await call(env.socketPath, "task.list", {});
    const before = peakRssBytes(pid);

    const line = 60 * MiB;
    const textBytes = line - EVENT_FRAME;
    const big = await finished(`big:${textBytes}:x`);
    expect(big).toMatchObject({ status: "succeeded", final_response: `big=${textBytes}` });
    const messages = (await allEvents(env.socketPath, big["task_id"] as string)).filter((e) => e.event_type === "agent.message");
    expect(messages.map((e) => e.payload)).toEqual([{ text: "x".repeat(32_768), truncated: true }]);

    // 7 control characters (6 bytes each escaped) and a euro sign: 10 bytes of text in 45 of line
    const piece = "\u0001\u0002\u0003\u0004\u0005\u0006\u0007€";
    const count = Math.floor((8 * MiB) / 10);
    const spooled = await finished(`repeat:${count}:${piece}`);
    const expected = Buffer.from(piece.repeat(count), "utf8");
    expect(spooled).toMatchObject({
      status: "succeeded",
      result: { storage: "spool", size_bytes: expected.length, sha256: sha256Hex(expected), retrievable: true },
    });
    const back = await readResult(spooled["task_id"] as string);
    const differsAt = back.findIndex((b, i) => b !== expected[i]);
    expect({ length: back.length, differsAt }).toEqual({ length: expected.length, differsAt: -1 });

    const peak = peakRssBytes(pid);
    expect(peak - before).toBeLessThan(3 * line);
  }, 240_000);

  test("a final text over 8 MiB that redaction brings under it is spooled whole; one far over is AGENT_RESULT_TOO_LARGE", async () => {
    // the workdir root and a space: each becomes `<workdir> ` once redacted
    const piece = `${env.workspace} `;
    const count = Math.ceil((9 * MiB) / Buffer.byteLength(piece));
    const shrunk = await finished(`repeat:${count}:${piece}`);
    const expected = Buffer.from("<workdir> ".repeat(count), "utf8");
    expect(expected.length).toBeLessThan(8 * MiB);
    expect(shrunk).toMatchObject({ status: "succeeded", result: { storage: "spool", size_bytes: expected.length, sha256: sha256Hex(expected) } });
    expect((await readResult(shrunk["task_id"] as string)).equals(expected)).toBe(true);

    const far = await finished(`repeat:${40 * MiB}:x`);
    expect(far).toMatchObject({ status: "failed", error_code: "AGENT_RESULT_TOO_LARGE" });
  }, 240_000);

  test("a long line nested 100,000 deep fails its task as a malformed line (AGENT_PROVIDER_ERROR), not a stack overflow, and the Bridge serves on", async () => {
    const deep = await finished("deep:100000");
    expect(deep).toMatchObject({ status: "failed", error_code: "AGENT_PROVIDER_ERROR", error_message: "the agent runtime sent a malformed line" });
    expect(await finished("complete:after deep")).toMatchObject({ status: "succeeded", final_response: "after deep" });
  }, 60_000);

  test("a line over the 64 MiB cap still fails its task with AGENT_PROVIDER_ERROR, and the Bridge serves on", async () => {
    const over = await finished(`big:${64 * MiB}:x`);
    expect(over).toMatchObject({ status: "failed", error_code: "AGENT_PROVIDER_ERROR" });
    expect(await finished("complete:after")).toMatchObject({ status: "succeeded", final_response: "after" });
  }, 240_000);
});
