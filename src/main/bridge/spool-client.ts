/**
 * Starts the spool worker (src/workers/spool-worker.ts) for the task service. Offers
 * `startSpoolWorker()` → `{ remote, exited, terminate }`: `remote` has the async `SpoolApi`
 * (`writeSpool`, `readSpoolChunk`, `removeSpool`, `removeLeftoverTemps`, `ensureResultsDir`); a call
 * pending or made after the worker stopped fails with `AGENT_RESULT_STORAGE_ERROR`.
 */
import { type StartedWorker, startWorker } from "../../shared/comlink-worker.ts";
import { ServerFsError } from "../../shared/errors.ts";
import { workerUrl } from "../../shared/self-command.ts";
import type { SpoolApi } from "../../workers/spool-worker.ts";

export type SpoolWorker = StartedWorker<SpoolApi>;

export function startSpoolWorker(): SpoolWorker {
  return startWorker<SpoolApi>(workerUrl("spool-worker"), () => new ServerFsError("AGENT_RESULT_STORAGE_ERROR", "the spool worker stopped"));
}
