/**
 * The runtime adapter contract (docs/runtimes.md#the-adapter-contract), provider-neutral: the task
 * service and the provider worker drive codex, claude and fake through these types only.
 *
 * Offers types: `RuntimeAdapter`, `RuntimeInfo`, `RunContext`, `RunHandle`, `Outcome`,
 * `ProviderEventType`, `ApprovalPayload`, `QuestionPayload`, `ApprovalResolution`,
 * `QuestionResolution`, `NativeFacts`, `Profile`, `ModelInfo`, `RunChoices`, `UsagePayload`;
 * the constant `NO_CHOICES`.
 *
 * Everything a run hands back (outcome, payloads) is plain data, so it crosses a comlink boundary.
 * Host paths in payloads and texts are left for the Bridge's redaction (docs/events.md#redaction).
 */

import type { Profile } from "../../shared/config/schema.ts";
import type { ErrorCode } from "../../shared/errors.ts";
import type { VerifiedStartDir } from "../../shared/fs/start-directory.ts";
import type { ApprovalResolution, Decision, QuestionResolution } from "../../shared/hitl-validation.ts";

export type { ApprovalResolution, Decision, Profile, QuestionResolution };

/** One `runtime.list` entry (docs/bridge-rpc.md#runtimelist) for an available runtime. */
export interface RuntimeInfo {
  name: string;
  available: boolean;
  version: string | null;
  persistent_session: boolean;
  live_steer: boolean;
  interactive_approval: boolean;
  interactive_question: boolean;
  in_flight_recovery: "none" | "session-resume" | "native";
}

/**
 * One model a task may ask for (docs/runtimes.md#models-effort-and-budget): its name as the runtime
 * takes it, the reasoning efforts it supports, the one it uses when none is asked (null: the CLI's own
 * choice), and whether it is the runtime's default model.
 */
export interface ModelInfo {
  model: string;
  efforts: string[];
  default_effort: string | null;
  is_default: boolean;
}

/** What a task asked for (docs/runtimes.md#models-effort-and-budget); null leaves it to the runtime. */
export interface RunChoices {
  model: string | null;
  effort: string | null;
  /** Claude only: the run stops once it has spent this much (AGENT_BUDGET_EXCEEDED). */
  max_budget_usd: number | null;
}

/** A run that asks for nothing: the runtime's own model, effort and no budget. */
export const NO_CHOICES: RunChoices = Object.freeze({ model: null, effort: null, max_budget_usd: null });

/** The payload of a `task.usage` event (docs/events.md#provider-events-the-runtime-adapters-in-the-provider-worker). */
export interface UsagePayload {
  model: string | null;
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
  reasoning_output_tokens: number;
  cost_usd: number | null;
}

/** The provider-normalized event types of docs/events.md#event-types (their payloads are specified there). */
export type ProviderEventType =
  | "turn.started"
  | "item.started"
  | "item.completed"
  | "provider.error"
  | "agent.message"
  | "command.started"
  | "file_change.started"
  | "tool.started"
  | "tool.completed"
  | "approval.auto_declined"
  | "task.usage"
  | "model.rerouted";

/** docs/task-model.md#human-in-the-loop-requests approval payload, as an adapter fills it. */
export interface ApprovalPayload {
  category: "command" | "file_change" | "filesystem_permission" | "network_permission" | "mcp_tool" | "provider_permission" | "other";
  title: string;
  /** Empty means all four. */
  available_decisions: Decision[];
  reason?: string;
  /** Where a command runs; null when it cannot be known for certain. */
  relative_cwd?: string | null;
  command_display?: string;
  tool?: string;
  /** The MCP server whose tool this is (Codex). */
  server?: string;
  blocked_path?: string;
  /** What will be changed; the Bridge turns each into its kind and a bounded diff (`ProposedChange`). */
  file_changes?: ProposedFileChange[];
  /** The command as the model asked for it (a shell wrapper around it removed). */
  command?: string;
  requested_permissions?: { permission_id: string; kind: string; details: Record<string, unknown> }[];
  network_approval_context?: Record<string, unknown>;
  additional_permissions?: Record<string, unknown>;
  tool_input?: Record<string, unknown>;
  /** The tool's input was cut to its bound (docs/agent-requests.md). */
  tool_input_truncated?: true;
  /** An approved command runs without the runtime's sandbox (Codex). */
  outside_sandbox?: true;
}

export type ChangeKind = "add" | "update" | "delete" | "rename";

/**
 * What a provider says a file change does, as far as it says: the Bridge makes the diff from it
 * (src/main/bridge/service/request-payload.ts) and drops it; none of it is stored as given.
 */
export interface ProposedChange {
  /** Unified hunks the provider computed (an update or rename). */
  hunks?: string;
  /** The content a deletion removes, as the provider read it. */
  before?: string;
  /** The content an added file gets. */
  after?: string;
  /** The whole new content of a file that may or may not exist (the Bridge reads what is there). */
  write?: string;
  /** In-place replacements, applied in order to what is there now. */
  edits?: { old_string: string; new_string: string; replace_all: boolean }[];
}

export interface ProposedFileChange {
  path: string;
  /** Known from the provider; else the Bridge decides it from the file (add or update). */
  kind?: ChangeKind;
  /** A rename's target. */
  new_path?: string;
  change?: ProposedChange;
}

/** docs/task-model.md#human-in-the-loop-requests question payload. */
export interface QuestionPayload {
  questions: {
    question_id: string;
    prompt: string;
    options: { option_id: string; label: string; description?: string }[];
    multi_select: boolean;
    allow_free_text: boolean;
  }[];
}

/** Native facts as they become known; an absent field is left as stored. */
export interface NativeFacts {
  sessionId?: string;
  turnId?: string;
  pgid?: number;
  startTime?: number;
}

export interface RunContext {
  taskId: string;
  /** Absolute host directory the provider runs in. */
  cwd: string;
  /**
   * The identity `cwd` had when the Bridge verified it; the provider is killed before any input if its
   * working directory is another one. The Bridge always sets it; adapter tests that spawn in a
   * directory of their own may leave it out.
   */
  startDir?: VerifiedStartDir;
  prompt: string;
  profile: Profile;
  /** The model, effort and budget the task asked for. */
  choices: RunChoices;
  /** The prior task's native session for a continuation, else null. */
  continueNativeSessionId: string | null;
  /** 32 lowercase hex, durable before `start` is called; exported as SERVERFS_PROVIDER_MARK. */
  mark: string;
  /** The provider's environment (the Bridge's plus the runtime's own variables). */
  env: Readonly<Record<string, string | undefined>>;
  /**
   * How many bytes of a long string in a provider line are kept (the rest is dropped as it is read;
   * docs/runtimes.md#process-model). The Bridge sets it from the run's roots; absent, nothing is cut.
   */
  keepBytes?: number;
  emit(type: ProviderEventType, payload: Record<string, unknown>): void;
  /** Rejects with a ServerFsError (e.g. AGENT_INTERACTION_EXPIRED) when no human answer will come. */
  requestApproval(payload: ApprovalPayload): Promise<ApprovalResolution>;
  askQuestion(payload: QuestionPayload): Promise<QuestionResolution>;
  /** The provider withdrew its own pending request. */
  abandonInteraction(): void;
  /**
   * Durably records native facts. The adapter awaits `{pgid, startTime}` before the provider gets its
   * task input; a rejection ends the run with the rejection's code.
   */
  recordNative(facts: NativeFacts): Promise<void>;
  /**
   * The provider passed its handshake and has its task input: the task is now `running` (docs/bridge-rpc.md
   * docs/task-model.md#execution steps 3–4). Called once; from then on the run accepts steering.
   */
  started(): void;
  /**
   * The provider produced output; resets the idle timer (`event_idle_timeout_seconds`). A promise
   * while the run's event batches wait for their commit (src/workers/event-batcher.ts, `backlog`):
   * the adapter reads the provider's next line only once it settles.
   */
  activity(): Promise<void> | undefined;
  /**
   * The provider reports work in progress that may be silent (a command running): `true` pauses the
   * idle timer, `false` (once that work is reported done) resumes it. Calls come in pairs.
   */
  busy(working: boolean): void;
}

/** Exactly one per run. A failure's `stderrTail` is raw provider output: redact before use. */
export type Outcome = { kind: "final"; text: string } | { kind: "failed"; code: ErrorCode; message: string; stderrTail?: string } | { kind: "cancelled" };

export interface RunHandle {
  /** Always resolves, never rejects. */
  readonly outcome: Promise<Outcome>;
  /** The group id once spawned (== the leader's pid), else null. */
  readonly pgid: number | null;
  /**
   * Live steering. AGENT_PROVIDER_ERROR when the runtime has none or refuses;
   * AGENT_TASK_NOT_ACTIVE when the provider is not (or no longer) ready to take it.
   */
  sendMessage(text: string): Promise<void>;
  /** Asks the provider to stop the turn; the caller then waits (`closeAndWait`) and kills the group. */
  cancel(): void;
  /** Closes the provider's input and waits up to `timeoutMs` for the leader to exit; true if it did. */
  closeAndWait(timeoutMs: number): Promise<boolean>;
}

export interface RuntimeAdapter {
  readonly name: string;
  /** Never starts a run; bounded; a missing binary is `available: false`, not an error. */
  probe(): Promise<RuntimeInfo>;
  /**
   * The models a task may ask for, as far as the operator allows them (`[runtimes.X] models`); never
   * starts a task. Rejects when the runtime cannot say (the listing then shows the models unknown).
   */
  listModels(): Promise<ModelInfo[]>;
  /**
   * The operator named the models a task may run (`[runtimes.X] models`), so a task that asks for none
   * runs the listed default; otherwise it runs whatever the runtime's own configuration says.
   */
  readonly onlyListedModels: boolean;
  /** Starts a run, or resumes `ctx.continueNativeSessionId`. Spawn failures arrive as the outcome. */
  start(ctx: RunContext): RunHandle;
}
