import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SpoolWorker, startSpoolWorker } from "../../src/main/bridge/spool-client.ts";
import { startWorker } from "../../src/shared/comlink-worker.ts";
import { ServerFsError } from "../../src/shared/errors.ts";
import { newTaskId } from "../../src/shared/ids.ts";
import { resultsDir } from "../../src/shared/spool.ts";
import { encoder } from "../../src/shared/utf8.ts";
import { type TempDir, tempDir } from "../helpers/workspace.ts";

/** Per-test bound, above every `within` below; nothing here waits on timing otherwise. */
const TEST_BOUND_MS = 40_000;

const sha256 = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");

/** The code a call rejects with; a resolved call is a test failure. */
async function rejectionCode(call: Promise<unknown>): Promise<string> {
  try {
    await call;
  } catch (e) {
    return e instanceof ServerFsError ? e.code : `uncoded ${String(e)}`;
  }
  throw new Error("the call resolved");
}

/** Settles `p` or fails after `ms`: a worker call must never hang. */
async function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still pending after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, bound]);
  } finally {
    clearTimeout(timer);
  }
}

let dir: TempDir;
let spool: SpoolWorker;
beforeAll(() => {
  dir = tempDir("serverfs-spool-worker-");
  spool = startSpoolWorker();
});
afterAll(() => {
  spool.terminate();
  dir.remove();
});

describe("result spool in the spool worker", () => {
  test(
    "an 8 MiB multi-byte result is written atomically and read back exactly in chunks",
    async () => {
      const stateDir = dir.path;
      const taskId = newTaskId();
      // 10 bytes per unit: exactly the 8,388,608-byte spool limit
      const text = `${"a€😀é".repeat(838_860)}zzzzzzzz`;
      const bytes = Buffer.from(text, "utf8");
      expect(bytes.length).toBe(8_388_608);
      await spool.remote.ensureResultsDir(stateDir);
      const written = await within(spool.remote.writeSpool(stateDir, taskId, encoder.encode(text)), 30_000);
      expect(written).toEqual({ size_bytes: bytes.length, sha256: sha256(bytes) });
      expect(readdirSync(resultsDir(stateDir))).toEqual([`${taskId}.txt`]);

      const parts: Buffer[] = [];
      let offset = 0;
      for (let calls = 0; calls < 1_000; calls++) {
        const chunk = await spool.remote.readSpoolChunk(stateDir, taskId, written.size_bytes, offset, 65_536);
        parts.push(Buffer.from(chunk.text, "utf8"));
        offset = chunk.next_offset_bytes;
        if (chunk.eof) break;
      }
      const back = Buffer.concat(parts);
      expect(back.equals(readFileSync(join(resultsDir(stateDir), `${taskId}.txt`)))).toBe(true);
      expect(sha256(back)).toBe(written.sha256);
    },
    TEST_BOUND_MS,
  );

  test(
    "contract codes cross the worker boundary as ServerFsError with their code",
    async () => {
      const stateDir = dir.path;
      const taskId = newTaskId();
      expect(await rejectionCode(spool.remote.readSpoolChunk(stateDir, taskId, 3, 0, 10))).toBe("AGENT_RESULT_NOT_RETRIEVABLE");
      expect(await rejectionCode(spool.remote.readSpoolChunk(stateDir, "not-a-task", 3, 0, 10))).toBe("AGENT_TASK_NOT_FOUND");
      const { size_bytes } = await spool.remote.writeSpool(stateDir, taskId, encoder.encode("€€"));
      expect(await rejectionCode(spool.remote.writeSpool(stateDir, taskId, encoder.encode("again")))).toBe("AGENT_RESULT_STORAGE_ERROR");
      expect(await rejectionCode(spool.remote.readSpoolChunk(stateDir, taskId, size_bytes, 1, 10))).toBe("INVALID_RESULT_OFFSET");
      expect(await rejectionCode(spool.remote.readSpoolChunk(stateDir, taskId, size_bytes, 0, 2))).toBe("INVALID_RESULT_LIMIT");
      try {
        await spool.remote.readSpoolChunk(stateDir, taskId, size_bytes + 1, 0, 10);
        throw new Error("the call resolved");
      } catch (e) {
        expect(e).toBeInstanceOf(ServerFsError);
        expect((e as ServerFsError).toText()).toBe("AGENT_RESULT_STORAGE_ERROR: the spooled result does not match its record");
      }
    },
    TEST_BOUND_MS,
  );

  test(
    "startup removal of leftover temporary files and GC removal run in the worker",
    async () => {
      const stateDir = dir.path;
      const taskId = newTaskId();
      await spool.remote.writeSpool(stateDir, taskId, encoder.encode("done"));
      writeFileSync(join(resultsDir(stateDir), `.${taskId}.0123456789abcdef.tmp`), "partial", { mode: 0o600 });
      expect(await spool.remote.removeLeftoverTemps(stateDir)).toBe(1);
      expect(await spool.remote.removeSpool(stateDir, taskId)).toBe(true);
      expect(readdirSync(resultsDir(stateDir))).not.toContain(`${taskId}.txt`);
    },
    TEST_BOUND_MS,
  );
});

describe("worker lifecycle (comlink adapter)", () => {
  const workerSource = (errorsUrl: string, adapterUrl: string) => `
    import { exposeApi } from ${JSON.stringify(adapterUrl)};
    import { ServerFsError } from ${JSON.stringify(errorsUrl)};
    exposeApi({
      coded() { throw new ServerFsError("REQUEST_STALE", "the request is stale"); },
      plain() { throw new Error("boom"); },
      crash() { return new Promise(() => setTimeout(() => { throw new Error("uncaught"); }, 20)); },
      double(x) { return x * 2; },
    });`;
  interface CrashApi {
    coded(): void;
    plain(): void;
    crash(): Promise<void>;
    double(x: number): number;
  }
  const startCrashWorker = () => {
    const src = workerSource(new URL("../../src/shared/errors.ts", import.meta.url).href, new URL("../../src/shared/comlink-worker.ts", import.meta.url).href);
    const url = new URL(URL.createObjectURL(new Blob([src], { type: "text/javascript" })));
    return startWorker<CrashApi>(url, () => new ServerFsError("AGENT_PROVIDER_DISCONNECTED", "the worker stopped"));
  };

  test(
    "a ServerFsError keeps its code; any other error arrives as a plain Error",
    async () => {
      const w = startCrashWorker();
      try {
        expect(await w.remote.double(21)).toBe(42);
        expect(await rejectionCode(w.remote.coded())).toBe("REQUEST_STALE");
        expect(await rejectionCode(w.remote.plain())).toBe("uncoded Error: boom");
      } finally {
        w.terminate();
      }
    },
    TEST_BOUND_MS,
  );

  test(
    "a call pending when the worker dies rejects with the caller's error, and so does every later call",
    async () => {
      const w = startCrashWorker();
      expect(await within(rejectionCode(w.remote.crash()), 10_000)).toBe("AGENT_PROVIDER_DISCONNECTED");
      await within(w.exited, 10_000);
      expect(await within(rejectionCode(w.remote.double(1)), 10_000)).toBe("AGENT_PROVIDER_DISCONNECTED");
    },
    TEST_BOUND_MS,
  );

  test(
    "after terminate the spool client fails calls with AGENT_RESULT_STORAGE_ERROR instead of hanging",
    async () => {
      const own = startSpoolWorker();
      expect(await own.remote.removeSpool(dir.path, newTaskId())).toBe(true);
      own.terminate();
      await within(own.exited, 10_000);
      expect(await within(rejectionCode(own.remote.removeLeftoverTemps(dir.path)), 10_000)).toBe("AGENT_RESULT_STORAGE_ERROR");
    },
    TEST_BOUND_MS,
  );
});
