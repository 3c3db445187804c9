/**
 * What crosses between the task service (main thread) and the provider worker. The worker owns the
 * child process and its stream; the main thread owns state decisions that touch a human, a guard,
 * a lease or a timer. Calls are comlink messages, so every value here is structured-cloneable.
 */
import type { LogLevelSetting } from "../shared/audit.ts";
import type { AuditFileSettings } from "../shared/config/load.ts";
import type { Profile } from "../shared/config/schema.ts";
import type { VerifiedStartDir } from "../shared/fs/start-directory.ts";
import type { GroupVerdict } from "../shared/process-group.ts";
import type { ApprovalResolution, NativeFacts, Outcome, QuestionResolution, RunChoices } from "./providers/types.ts";

export type { NativeFacts };

/** Everything the worker needs to run one task; the prompt travels in memory only, never stored. */
export interface RunSpec {
  taskId: string;
  runtime: string;
  /** The resolved start directory on the host. */
  cwd: string;
  /** The start directory's identity as verified at submit; the provider's cwd must match it. */
  startDir: VerifiedStartDir;
  prompt: string;
  profile: Profile;
  continueNativeSessionId: string | null;
  /** The model, effort and budget the run is given (checked at submit). */
  choices: RunChoices;
  mark: string;
  /** Workdir roots (configured and real path) for host-path redaction. */
  roots: string[];
}

/**
 * A run's outcome as it crosses to the main thread: a final text travels as its redacted UTF-8 bytes in
 * a transferred buffer, so an 8 MiB result is encoded once and never copied again on its way to the
 * spool worker (docs/performance.md, "Long provider lines").
 */
export type ReportedOutcome = Exclude<Outcome, { kind: "final" }> | { kind: "final"; utf8: Uint8Array };

/** The main thread's side, proxied into the worker. */
export interface ProviderHost {
  /** Native ids and the process group were recorded in the row; mirror them into the guard. */
  recorded(taskId: string, facts: NativeFacts): Promise<void>;
  /** A batch of provider events was committed for the task (wakes long polls). */
  eventsCommitted(taskId: string): void;
  /** The provider asks a human for an approval; resolves with the checked reply, rejects (as `{code,message}`) on expiry or refusal. */
  askApproval(taskId: string, payload: Record<string, unknown>): Promise<ApprovalResolution>;
  /** The provider asks a human a question; as askApproval. */
  askQuestion(taskId: string, payload: Record<string, unknown>): Promise<QuestionResolution>;
  /** The provider withdrew its pending request. */
  withdrawn(taskId: string): void;
  /** The run's single outcome (final text already redacted). */
  outcome(taskId: string, outcome: ReportedOutcome): Promise<void>;
}

/** How the run went as a process: whether it started, and the group the Bridge checks afterwards. */
export interface RunReport {
  started: boolean;
  pgid: number | null;
  startTime: number | null;
}

export interface ProviderWorkerApi {
  /** Opens the worker's own store; its dropped service events are logged at `logLevel` (and to the audit file when set). */
  init(stateDir: string, logLevel: LogLevelSetting, auditFile: AuditFileSettings | null): Promise<void>;
  run(spec: RunSpec, host: ProviderHost): Promise<RunReport>;
  /** The finally path's step 1 for a run (`proveStopped` of src/shared/process-group.ts), in the worker. */
  proveStopped(pgid: number | null, startTime: number | null, mark: string | null, stopRequested: boolean): Promise<GroupVerdict>;
  cancel(taskId: string): Promise<void>;
  sendMessage(taskId: string, text: string): Promise<void>;
  shutdown(): Promise<void>;
  /** The Bridge is idle: this worker and its event writer give memory back (src/shared/release-memory.ts). */
  releaseMemory(): Promise<void>;
}
