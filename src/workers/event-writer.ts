/**
 * The event writer (docs/task-model.md#threads): commits the provider worker's event batches on a
 * connection of its own, so one batch's commit (`synchronous = FULL`: a few hundred microseconds of
 * fsync) overlaps the parsing of the next instead of following it (docs/decisions.md, "The event
 * writer"). It is started by the provider worker, which alone calls it; calls are served one at a
 * time in the order they were sent, so a task's batches and its `running` transition commit in
 * emission order (docs/events.md#appending).
 */
import type { LogLevelSetting } from "../shared/audit.ts";
import { openAuditLog } from "../shared/audit-file.ts";
import { exposeApi } from "../shared/comlink-worker.ts";
import type { AuditFileSettings } from "../shared/config/load.ts";
import { type ErrorCode, ServerFsError } from "../shared/errors.ts";
import { releaseMemory } from "../shared/release-memory.ts";
import { isStorageFault } from "../shared/storage-fault.ts";
import { Store } from "../shared/store/index.ts";

let db: Store | null = null;
/**
 * Runs whose batch broke a limit (or could not be stored): the batches already sent after it are
 * dropped here, as the provider worker drops the ones it has not sent yet (docs/events.md#limits).
 */
const broken = new Set<string>();

const store = (): Store => {
  if (!db) throw new ServerFsError("BRIDGE_PROTOCOL_ERROR", "the event writer is not initialized");
  return db;
};

const faultCode = (e: unknown): ErrorCode => {
  if (isStorageFault(e)) return "BRIDGE_STORAGE_ERROR";
  throw e;
};

export const eventWriterApi = {
  init(stateDir: string, logLevel: LogLevelSetting, auditFile: AuditFileSettings | null): void {
    db = Store.open(stateDir, { log: openAuditLog(logLevel, auditFile) });
  },
  /** One batch, one transaction; the code of the limit it broke, or BRIDGE_STORAGE_ERROR. */
  commit(taskId: string, types: string[], payloadJsons: string[]): ErrorCode | null {
    if (broken.has(taskId)) return null;
    let code: ErrorCode | null;
    try {
      code = store().appendProviderBatch(taskId, types, payloadJsons).broke;
    } catch (e) {
      code = faultCode(e);
    }
    if (code) broken.add(taskId);
    return code;
  },
  /**
   * `starting` → `running` with `task.started` (`{runtime, model, effort, max_budget_usd}`), after every
   * batch sent before it; null when it committed.
   */
  started(taskId: string, payload: { runtime: string } & Record<string, unknown>): ErrorCode | null {
    try {
      store().transition(taskId, "running", { events: [{ type: "task.started", payload }] });
      return null;
    } catch (e) {
      return faultCode(e);
    }
  },
  /** The run is over: nothing more of it will be sent. */
  endRun(taskId: string): void {
    broken.delete(taskId);
  },
  releaseMemory(): void {
    releaseMemory(db);
  },
  close(): void {
    db?.close();
    db = null;
  },
};

export type EventWriterApi = typeof eventWriterApi;

exposeApi(eventWriterApi);
