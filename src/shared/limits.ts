/**
 * Every fixed (not configurable) limit of ServerFS, named once. The Bridge's service and store
 * enforce them, the RPC and MCP schemas default and bound by them, the messages quote them (through
 * `byteSize`), and the execution manifest records a part of them (`FIXED_LIMITS` in manifest.ts).
 * The tables that explain them: docs/task-model.md#limits, docs/bridge-rpc.md#limits and
 * docs/events.md#limits.
 */
export const LIMITS = {
  /** A submitted prompt's UTF-8 bytes (docs/task-model.md#limits). */
  max_prompt_bytes: 65_536,
  /** A steering message's UTF-8 bytes (docs/task-model.md#steering). */
  max_message_bytes: 65_536,
  /** A stored approval or question payload's compact JSON (docs/task-model.md#human-in-the-loop-requests). */
  max_interaction_bytes: 65_536,
  /** One event payload's compact JSON (docs/events.md#limits). */
  max_event_bytes: 65_536,
  /** Events one task may hold (docs/events.md#limits). */
  max_events_per_task: 10_000,
  /** The largest final response kept inline in the task row (docs/task-model.md#results). */
  max_final_response_bytes: 262_144,
  /** ...and its JSON string, escapes included, which a task answer must carry (docs/task-model.md#results). */
  max_inline_result_json_bytes: 524_288,
  /** The largest final response the spool keeps; beyond it a run fails (docs/task-model.md#results). */
  max_spooled_result_bytes: 8_388_608,
  /** The preview of a spooled result that `task.get` shows (docs/task-model.md#results). */
  result_preview_bytes: 65_536,
  /** The most bytes one `task.result.read` returns, and its default (docs/bridge-rpc.md#taskresultread). */
  max_result_chunk_bytes: 65_536,
  /** A stored `error_message`, cut to whole characters (docs/task-model.md#limits). */
  max_error_message_bytes: 4096,
  /** The most events one `task.events` page holds (docs/bridge-rpc.md#taskevents). */
  max_event_page: 500,
  /** The most tasks one `task.list` page holds (docs/bridge-rpc.md#tasklist). */
  max_task_page: 500,
  /** The page size of `task.events` and `task.list` when none is asked for (docs/bridge-rpc.md#limits). */
  default_page: 100,
  /** The longest `task.events` long poll (docs/bridge-rpc.md#long-polls). */
  max_wait_ms: 25_000,
  /** One RPC request or response line, LF not counted (docs/bridge-rpc.md#socket-and-framing). */
  max_line_bytes: 1_048_576,
  /** A `correlation_id` or `idempotency_key` (docs/bridge-rpc.md#limits). */
  max_opaque_bytes: 256,
} as const;
