/**
 * The execution manifest (docs/task-model.md#the-execution-manifest): the immutable record of the facts a task ran under, written
 * once with the task row and hashed so a reader can verify it later.
 *
 * Offers:
 * - `FIXED_LIMITS`: the fixed limits (limits.ts, docs/task-model.md#limits) that the manifest records, in the recorded
 *   key order; the manifest is hashed, so this set changes only with a new manifest schema.
 * - `policySha256(workdir)`: `sha256(canonical({agent_mode, agent_runtimes (sorted), alias, read_only, slot}))`.
 * - `buildManifest(input)`: the docs/task-model.md#the-execution-manifest object, its canonical JSON (`manifest_json`) and `manifest_sha256`.
 *
 * Pure functions: usable from any thread. No host path, prompt or native id enters a manifest; the
 * input types simply have no place for them.
 */

import { PROTOCOL_VERSION } from "./bridge-protocol/envelope.ts";
import { canonicalJson, sha256Hex } from "./canonical-json.ts";
import type { AgentMode, BridgeSettings, Profile, RuntimeName } from "./config/schema.ts";
import { LIMITS } from "./limits.ts";
import { VERSION } from "./version.ts";

export const FIXED_LIMITS = {
  max_prompt_bytes: LIMITS.max_prompt_bytes,
  max_message_bytes: LIMITS.max_message_bytes,
  max_interaction_bytes: LIMITS.max_interaction_bytes,
  max_event_bytes: LIMITS.max_event_bytes,
  max_events_per_task: LIMITS.max_events_per_task,
  max_final_response_bytes: LIMITS.max_final_response_bytes,
  max_spooled_result_bytes: LIMITS.max_spooled_result_bytes,
  result_preview_bytes: LIMITS.result_preview_bytes,
  max_result_chunk_bytes: LIMITS.max_result_chunk_bytes,
} as const;

export type InFlightRecovery = "none" | "session-resume" | "native";
export type Lifecycle = BridgeSettings["lifecycle"];

/** The workdir facts the policy hash covers: its effective policy, not its paths. */
export interface PolicyFacts {
  alias: string;
  slot: number;
  read_only: boolean;
  agent_mode: AgentMode;
  agent_runtimes: readonly RuntimeName[];
}

export interface ManifestLimits extends Record<keyof typeof FIXED_LIMITS, number> {
  max_active_tasks: number;
  task_timeout_seconds: number;
  interaction_timeout_seconds: number;
  retention_hours: number;
}

export interface Manifest {
  schema_version: 1;
  bridge_version: string;
  protocol_version: number;
  runtime: { name: RuntimeName; version: string | null; in_flight_recovery: InFlightRecovery };
  workspace: { alias: string; slot: number; relative_cwd: string; profile: Profile };
  policy: { read_only: boolean; agent_mode: AgentMode; policy_sha256: string };
  limits: ManifestLimits;
  advisor: { enabled: false; preflight_status: "disabled" };
  continuation: { from_task_id: string | null };
  correlation_id: string | null;
  deadline_at: string;
  idempotency_key: string | null;
  /**
   * The model, effort and budget the run was given (docs/task-model.md#the-execution-manifest); absent
   * from a manifest written before they existed, which hashes as it was written.
   */
  choices?: ManifestChoices;
}

/** The budget in millionths of a dollar: canonical JSON holds integers only. */
export interface ManifestChoices {
  model: string | null;
  effort: string | null;
  max_budget_micro_usd: number | null;
}

export interface ManifestInput {
  /** The runtime as the submit-time probe saw it. */
  runtime: { name: RuntimeName; version: string | null; in_flight_recovery: InFlightRecovery };
  workdir: PolicyFacts;
  /** The normalized start directory (`""` = the workdir root). */
  relativeCwd: string;
  profile: Profile;
  lifecycle: Pick<Lifecycle, "max_active_tasks" | "task_timeout_seconds" | "interaction_timeout_seconds" | "retention_hours">;
  continueFromTaskId: string | null;
  correlationId: string | null;
  deadlineAt: string;
  idempotencyKey: string | null;
  /** Absent: nothing asked, recorded as nulls. */
  choices?: ManifestChoices;
}

export interface BuiltManifest {
  manifest: Manifest;
  /** The canonical JSON stored in `tasks.manifest_json`. */
  json: string;
  /** `sha256(json)`, stored in `tasks.manifest_sha256`. */
  sha256: string;
}

export function policySha256(w: PolicyFacts): string {
  return sha256Hex(
    canonicalJson({
      agent_mode: w.agent_mode,
      agent_runtimes: [...w.agent_runtimes].sort(),
      alias: w.alias,
      read_only: w.read_only,
      slot: w.slot,
    }),
  );
}

export function buildManifest(input: ManifestInput): BuiltManifest {
  const { lifecycle, workdir } = input;
  const manifest: Manifest = {
    schema_version: 1,
    bridge_version: VERSION,
    protocol_version: PROTOCOL_VERSION,
    runtime: {
      name: input.runtime.name,
      version: input.runtime.version,
      in_flight_recovery: input.runtime.in_flight_recovery,
    },
    workspace: { alias: workdir.alias, slot: workdir.slot, relative_cwd: input.relativeCwd, profile: input.profile },
    policy: { read_only: workdir.read_only, agent_mode: workdir.agent_mode, policy_sha256: policySha256(workdir) },
    limits: {
      ...FIXED_LIMITS,
      max_active_tasks: lifecycle.max_active_tasks,
      task_timeout_seconds: lifecycle.task_timeout_seconds,
      interaction_timeout_seconds: lifecycle.interaction_timeout_seconds,
      retention_hours: lifecycle.retention_hours,
    },
    advisor: { enabled: false, preflight_status: "disabled" },
    continuation: { from_task_id: input.continueFromTaskId },
    correlation_id: input.correlationId,
    deadline_at: input.deadlineAt,
    idempotency_key: input.idempotencyKey,
    choices: { model: input.choices?.model ?? null, effort: input.choices?.effort ?? null, max_budget_micro_usd: input.choices?.max_budget_micro_usd ?? null },
  };
  const json = canonicalJson(manifest);
  return { manifest, json, sha256: sha256Hex(json) };
}
