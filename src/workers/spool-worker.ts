/**
 * The spool worker (docs/task-model.md#threads, docs/task-model.md#results): writes spooled results (SHA-256, atomic publish), serves
 * chunked reads, removes spool files for GC and leftover temporary files at startup, off the main
 * thread. Its API is `SpoolApi`, reached through `startSpoolWorker()` (src/main/bridge/spool-client.ts);
 * errors arrive as `ServerFsError` with their code.
 */
import { exposeApi } from "../shared/comlink-worker.ts";
import { releaseMemory } from "../shared/release-memory.ts";
import { ensureResultsDir, readSpoolChunk, removeLeftoverTemps, removeSpool, writeSpool } from "../shared/spool.ts";

export const spoolApi = {
  ensureResultsDir,
  writeSpool,
  readSpoolChunk,
  removeSpool,
  removeLeftoverTemps,
  /** The Bridge is idle: the 8 MiB results this worker was handed are garbage by now (src/shared/release-memory.ts). */
  releaseMemory: () => releaseMemory(null),
};

export type SpoolApi = typeof spoolApi;

exposeApi(spoolApi);
