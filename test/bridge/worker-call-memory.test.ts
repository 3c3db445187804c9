/**
 * A worker call's answer is garbage once the caller is done with it (src/shared/comlink-worker.ts):
 * the real spool worker serves an 8 MiB result in 64 KiB chunks, as `task.result.read` pages it, five
 * times over, and the caller's heap afterwards holds none of the 40 MiB it was handed.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { startSpoolWorker } from "../../src/main/bridge/spool-client.ts";
import { newTaskId } from "../../src/shared/ids.ts";
import { encoder } from "../../src/shared/utf8.ts";
import { tempDir } from "../helpers/workspace.ts";

const RESULT_BYTES = 8 * 1024 * 1024;
const CHUNK_BYTES = 65_536;
const READS = 5;

const dir = tempDir("sfs-wcm-");
const spool = startSpoolWorker();

afterAll(() => {
  spool.terminate();
  dir.remove();
});

const heapMb = (): number => {
  Bun.gc(true);
  return process.memoryUsage().heapUsed / 1e6;
};

describe("worker calls do not keep their answers", () => {
  test("reading an 8 MiB result back in 64 KiB chunks five times leaves the caller's heap where it was", async () => {
    const stateDir = dir.dir("state");
    await spool.remote.ensureResultsDir(stateDir);
    const taskId = newTaskId();
    await spool.remote.writeSpool(stateDir, taskId, encoder.encode("serverfs result\n".repeat(RESULT_BYTES / 16)));
    const before = heapMb();
    let chars = 0;
    for (let read = 0; read < READS; read++) {
      for (let offset = 0, eof = false; !eof; ) {
        const chunk = await spool.remote.readSpoolChunk(stateDir, taskId, RESULT_BYTES, offset, CHUNK_BYTES);
        chars += chunk.text.length;
        offset = chunk.next_offset_bytes;
        eof = chunk.eof;
      }
    }
    expect(chars).toBe(READS * RESULT_BYTES);
    // each chunk is a 64 KiB string on this thread: kept, the five reads would be over 40 MB
    expect(heapMb() - before).toBeLessThan(8);
  }, 60_000);
});
