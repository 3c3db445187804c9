/**
 * Pieces every runtime adapter shares: coded failure outcomes, the handle of a run that never
 * spawned, and the `runtime.list` entry of bridge.md §13.1 (the capabilities differ only in steering).
 */
import { isServerFsError, ServerFsError } from "../../shared/errors.ts";
import type { Outcome, RunHandle, RuntimeInfo } from "./types.ts";

export const failed = (code: ServerFsError["code"], message: string, stderrTail?: string): Outcome =>
  stderrTail ? { kind: "failed", code, message, stderrTail } : { kind: "failed", code, message };

/** A thrown ServerFsError keeps its code; anything else is the generic provider failure. */
export const failedFrom = (e: unknown): Outcome =>
  isServerFsError(e) ? failed(e.code, e.message) : failed("AGENT_PROVIDER_ERROR", "agent runtime failed");

export const notActive = (): ServerFsError => new ServerFsError("AGENT_TASK_NOT_ACTIVE", "the provider is not ready for a message");

/** The handle of a run whose provider could not be spawned: its outcome is already known. */
export function spawnFailure(outcome: Outcome, sendMessage: RunHandle["sendMessage"] = () => Promise.reject(notActive())): RunHandle {
  return { outcome: Promise.resolve(outcome), pgid: null, sendMessage, cancel: () => undefined, closeAndWait: async () => true };
}

export function runtimeInfo(name: string, available: boolean, version: string | null, liveSteer: boolean): RuntimeInfo {
  return {
    name,
    available,
    version,
    persistent_session: true,
    live_steer: liveSteer,
    interactive_approval: true,
    interactive_question: true,
    in_flight_recovery: "session-resume",
  };
}
