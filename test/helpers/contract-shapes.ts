/**
 * Shapes of the contract that several suites check the code against, written once as the docs state
 * them, so that each suite compares with the same restatement.
 */

/** The task object's fields, all of them (docs/task-model.md "The task object"). */
export const TASK_OBJECT_FIELDS = [
  "task_id",
  "runtime",
  "workdir_alias",
  "workdir_slot",
  "relative_cwd",
  "profile",
  "status",
  "created_at",
  "updated_at",
  "started_at",
  "completed_at",
  "deadline_at",
  "continue_from_task_id",
  "correlation_id",
  "idempotency_key",
  "final_response",
  "final_response_truncated",
  "result",
  "manifest",
  "manifest_sha256",
  "error_code",
  "error_message",
  "pending_request_id",
  "pending_request",
  "usage",
  "submitter",
] as const;

/** The `fake` runtime's runtime.list entry (docs/runtimes.md): version "1", every capability, session-resume. */
export const FAKE_RUNTIME_ENTRY = {
  name: "fake",
  available: true,
  version: "1",
  persistent_session: true,
  live_steer: true,
  interactive_approval: true,
  interactive_question: true,
  in_flight_recovery: "session-resume",
} as const;

/** The same entry as `runtime.list` and list_agent_runtimes show it: with the fake runtime's one model. */
export const FAKE_RUNTIME_LISTED = {
  ...FAKE_RUNTIME_ENTRY,
  models: [{ model: "fake-model", efforts: ["low", "high"], default_effort: "low", is_default: true }],
} as const;

/**
 * A manifest's `limits` under the default lifecycle settings (docs/task-model.md "The execution manifest"
 * and "Limits"): the fixed limits, then the effective max_active_tasks, task_timeout_seconds,
 * interaction_timeout_seconds and retention_hours.
 */
export const DEFAULT_MANIFEST_LIMITS = {
  max_prompt_bytes: 65_536,
  max_message_bytes: 65_536,
  max_interaction_bytes: 65_536,
  max_event_bytes: 65_536,
  max_events_per_task: 10_000,
  max_final_response_bytes: 262_144,
  max_spooled_result_bytes: 8_388_608,
  result_preview_bytes: 65_536,
  max_result_chunk_bytes: 65_536,
  max_active_tasks: 4,
  task_timeout_seconds: 86_400,
  interaction_timeout_seconds: 0,
  retention_hours: 168,
} as const;
