/**
 * A run's single outcome becoming the task's terminal state (docs/task-model.md#states-and-transitions):
 * success inline or spooled, a cancel, or a coded failure. Offers `onOutcome` and `settleFailure`.
 */
import * as Comlink from "comlink";
import { byteSize } from "../../../shared/byte-size.ts";
import type { ErrorCode } from "../../../shared/errors.ts";
import { LIMITS } from "../../../shared/limits.ts";
import { classifyResult } from "../../../shared/result-class.ts";
import { isTerminal } from "../../../shared/store/index.ts";
import type { ReportedOutcome } from "../../../workers/provider-protocol.ts";
import type { ServiceContext } from "./context.ts";

/** The single outcome of a run becomes the task's terminal state. */
export async function onOutcome(ctx: ServiceContext, taskId: string, outcome: ReportedOutcome): Promise<void> {
  if (ctx.closing) return; // whatever arrives during shutdown is discarded (docs/task-model.md#shutdown)
  if (outcome.kind === "failed") return settleFailure(ctx, taskId, outcome.code, outcome.message);
  if (outcome.kind === "cancelled") {
    ctx.unrecorded.attempt(taskId, () => ctx.store.endTask(taskId, { to: "cancelled" }));
    ctx.waiters.notify(taskId);
    return;
  }
  const task = ctx.store.getTask(taskId);
  if (task?.status !== "running") return; // cancelled or interrupted meanwhile: the text is discarded
  const cls = classifyResult(outcome.utf8);
  if (cls.storage === "too_large")
    return settleFailure(ctx, taskId, "AGENT_RESULT_TOO_LARGE", `the final response is larger than ${byteSize(LIMITS.max_spooled_result_bytes)}`);
  const completed = { type: "task.completed", payload: { result_storage: cls.storage, result_size_bytes: cls.size_bytes } };
  if (cls.storage === "inline") {
    ctx.unrecorded.attempt(taskId, () =>
      ctx.store.transition(taskId, "succeeded", {
        from: ["running"],
        set: { final_response: cls.text, result_storage: "inline", result_size_bytes: cls.size_bytes, result_sha256: cls.sha256 },
        events: [completed],
      }),
    );
  } else {
    const stateDir = ctx.deps.config.bridge.stateDir;
    let written: { size_bytes: number; sha256: string };
    try {
      // the bytes move on to the spool worker, which hashes them as it writes: no copy, no hash here
      written = await ctx.deps.spool.writeSpool(stateDir, taskId, Comlink.transfer(outcome.utf8, [outcome.utf8.buffer]));
    } catch {
      return settleFailure(ctx, taskId, "AGENT_RESULT_STORAGE_ERROR", "the result could not be stored");
    }
    const { size_bytes, sha256 } = written;
    const done = ctx.unrecorded.attempt(taskId, () =>
      ctx.store.transition(taskId, "succeeded", {
        from: ["running"],
        set: { final_response: cls.preview, result_storage: "spool", result_size_bytes: size_bytes, result_sha256: sha256 },
        events: [{ type: "task.result_spooled", payload: { size_bytes, sha256 } }, completed],
      }),
    );
    if (!done) await ctx.deps.spool.removeSpool(stateDir, taskId).catch(() => false);
  }
  ctx.waiters.notify(taskId);
}

/** A coded failure: `interrupted` while waiting for a human, else `failed` (docs/task-model.md#execution, "Failures"). */
export async function settleFailure(ctx: ServiceContext, taskId: string, code: ErrorCode, message: string): Promise<void> {
  if (ctx.closing) return; // the shutdown ends the task with BRIDGE_SHUTDOWN instead
  // its end already failed to be written: the periodic sweep records it, not another wait on the store
  if (ctx.unrecorded.has(taskId)) return;
  const task = ctx.store.getTask(taskId);
  if (!task || isTerminal(task.status)) return;
  const waiting = task.status === "waiting_for_approval" || task.status === "waiting_for_question";
  const to = waiting || task.status === "queued" ? "interrupted" : "failed";
  ctx.unrecorded.attempt(taskId, () => ctx.store.endTask(taskId, { to, error: { code, message } }));
  ctx.waiters.notify(taskId);
}
