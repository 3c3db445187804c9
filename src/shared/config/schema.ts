/**
 * The TOML configuration file of docs/configuration.md as valibot schemas: every key, its type and default.
 * Unknown keys are refused (strict objects) so a typo never silently falls back to a default.
 */
import { availableParallelism } from "node:os";
import * as v from "valibot";

const int = (min: number, max = Number.MAX_SAFE_INTEGER) => v.pipe(v.number(), v.integer(), v.minValue(min), v.maxValue(max));
const positive = () => int(1);
const strings = () => v.array(v.string());

export const AGENT_MODES = ["disabled", "review", "workspace-write"] as const;
/** The MCP protocol revisions `serverfs mcp` can serve (docs/protocol.md); 2025-11-25 stands for its whole era. */
export const PROTOCOL_REVISIONS = ["2025-11-25", "2026-07-28"] as const;
export const RUNTIME_NAMES = ["codex", "claude", "fake"] as const;
export type AgentMode = (typeof AGENT_MODES)[number];
/** What a task runs with: an agent mode that allows a task at all (docs/task-model.md#submission). */
export type Profile = Exclude<AgentMode, "disabled">;
export type RuntimeName = (typeof RUNTIME_NAMES)[number];

/** The per-workdir policy keys; `[defaults]` holds all of them, a workdir any subset. */
const policyEntries = {
  read_only: v.boolean(),
  allow_hidden: v.boolean(),
  disable_default_deny: v.boolean(),
  extra_deny_globs: strings(),
  binary_transfer_enabled: v.boolean(),
  max_read_bytes: positive(),
  max_read_lines: positive(),
  max_write_bytes: positive(),
  max_binary_transfer_bytes: positive(),
  agent_mode: v.picklist(AGENT_MODES),
  agent_runtimes: v.array(v.picklist(RUNTIME_NAMES)),
};

export const POLICY_DEFAULTS = {
  read_only: true,
  allow_hidden: false,
  disable_default_deny: false,
  extra_deny_globs: [] as string[],
  binary_transfer_enabled: false,
  max_read_bytes: 524288,
  max_read_lines: 500,
  max_write_bytes: 1048576,
  max_binary_transfer_bytes: 8388608,
  agent_mode: "disabled" as AgentMode,
  agent_runtimes: [] as RuntimeName[],
};

const DefaultsSchema = v.strictObject(
  Object.fromEntries(
    Object.entries(policyEntries).map(([k, s]) => [k, v.optional(s as v.GenericSchema, POLICY_DEFAULTS[k as keyof typeof POLICY_DEFAULTS])]),
  ) as { [K in keyof typeof policyEntries]: v.OptionalSchema<(typeof policyEntries)[K], never> },
);

const WorkdirSchema = v.strictObject({
  slot: int(1, 16),
  alias: v.pipe(v.string(), v.regex(/^[A-Za-z][A-Za-z0-9_-]{0,31}$/, "must match ^[A-Za-z][A-Za-z0-9_-]{0,31}$")),
  path: v.string(),
  mcp_path: v.optional(v.string()),
  description: v.optional(v.string()),
  ...Object.fromEntries(Object.entries(policyEntries).map(([k, s]) => [k, v.optional(s)])),
} as {
  slot: ReturnType<typeof int>;
  alias: v.SchemaWithPipe<[v.StringSchema<undefined>, v.RegexAction<string, string>]>;
  path: v.StringSchema<undefined>;
  mcp_path: v.OptionalSchema<v.StringSchema<undefined>, undefined>;
  description: v.OptionalSchema<v.StringSchema<undefined>, undefined>;
} & { [K in keyof typeof policyEntries]: v.OptionalSchema<(typeof policyEntries)[K], undefined> });

const LIMIT_DEFAULTS = {
  default_list_limit: 100,
  max_list_entries: 500,
  default_search_results: 50,
  max_search_results: 100,
  max_walk_entries: 200000,
  search_timeout_seconds: 15,
  search_max_file_bytes: 52428800,
  max_edits_per_call: 50,
  mutation_lock_wait_ms: 2000,
  // The event loop and memory under load (docs/reliability.md, "Hardening"): bytes a line seek may
  // scan, threads that walk and search, heavy calls (walks, searches, listings, line seeks) at once.
  max_scan_bytes: 268435456,
  search_workers: Math.max(1, availableParallelism()),
  max_concurrent_heavy_calls: 2 * Math.max(1, availableParallelism()),
};

const LimitsSchema = v.strictObject(
  Object.fromEntries(Object.entries(LIMIT_DEFAULTS).map(([k, d]) => [k, v.optional(positive(), d)])) as {
    [K in keyof typeof LIMIT_DEFAULTS]: v.OptionalSchema<ReturnType<typeof positive>, number>;
  },
);

/** `[server.http.oauth]`: ServerFS as an OAuth 2.1 resource server (docs/configuration.md#serverhttpoauth). */
const OAuthSchema = v.strictObject({
  issuer: v.string(),
  resource: v.string(),
  jwks_uri: v.optional(v.string()),
});

const HttpSchema = v.strictObject({
  allowed_hosts: v.optional(strings()),
  allowed_origins: v.optional(strings(), []),
  bearer_token_file: v.optional(v.string(), ""),
  oauth: v.optional(OAuthSchema),
});

const ServerSchema = v.strictObject({
  log_level: v.optional(v.picklist(["debug", "info", "warn", "error"]), "info"),
  http: v.optional(HttpSchema, {}),
  http_max_sessions: v.optional(positive(), 256),
  http_session_idle_seconds: v.optional(positive(), 900),
  elicitation: v.optional(v.boolean(), true),
  protocol_revisions: v.optional(v.pipe(v.array(v.picklist(PROTOCOL_REVISIONS)), v.minLength(1)), ["2025-11-25", "2026-07-28"]),
});

const LifecycleSchema = v.strictObject({
  task_timeout_seconds: v.optional(positive(), 86400),
  interaction_timeout_seconds: v.optional(int(0), 0),
  retention_hours: v.optional(positive(), 168),
  max_active_tasks: v.optional(positive(), 4),
  maintenance_interval_seconds: v.optional(positive(), 30),
});

const BridgeSchema = v.strictObject({
  enabled: v.optional(v.boolean(), false),
  socket_path: v.optional(v.string(), ""),
  state_dir: v.optional(v.string(), "~/.local/state/serverfs-agent-bridge"),
  lock_dir: v.optional(v.string(), "~/.local/share/serverfs-agent-bridge/runtime/locks"),
  rpc_timeout_seconds: v.optional(positive(), 30),
  allowed_peer_uid: v.optional(int(-1), -1),
  allowed_peer_gid: v.optional(int(-1), -1),
  enable_fake_runtime: v.optional(v.boolean(), false),
  mcp_socket_path: v.optional(v.string(), ""),
  mcp_lock_dir: v.optional(v.string(), ""),
  lifecycle: v.optional(LifecycleSchema, {}),
  recovery: v.optional(v.strictObject({ terminate_orphans: v.optional(v.boolean(), true) }), {}),
});

/** Model names as a CLI takes them: no empty name, no control character, no duplicate. */
const modelNames = () =>
  v.pipe(
    v.array(v.pipe(v.string(), v.regex(/^[A-Za-z0-9][A-Za-z0-9._:/@[\]-]{0,127}$/, "must be a model name (letters, digits, . _ : / @ [ ] -)"))),
    v.check((names) => new Set(names).size === names.length, "must not repeat a model"),
  );

/** Claude Code's model aliases (`claude --help`): each follows the newest model of its family. */
export const CLAUDE_DEFAULT_MODELS = ["sonnet", "opus", "haiku", "fable"] as const;

const CodexSchema = v.strictObject({
  enabled: v.optional(v.boolean(), false),
  bin: v.optional(v.string(), "codex"),
  codex_home: v.optional(v.string(), "~/.codex"),
  request_timeout_seconds: v.optional(positive(), 10),
  event_idle_timeout_seconds: v.optional(int(0), 0),
  approval_policy: v.optional(v.string(), ""),
  sandbox: v.optional(v.picklist(["", "read-only", "workspace-write", "danger-full-access"]), ""),
  // the models a task may ask for, narrowed from what the CLI lists (model/list); empty: all of them
  models: v.optional(modelNames(), []),
});

const ClaudeSchema = v.strictObject({
  enabled: v.optional(v.boolean(), false),
  bin: v.optional(v.string(), "claude"),
  config_dir: v.optional(v.string(), ""),
  probe_timeout_seconds: v.optional(positive(), 5),
  event_idle_timeout_seconds: v.optional(int(0), 0),
  // the CLI cannot list its models: these are the ones a task may ask for, the first the default
  models: v.optional(v.pipe(modelNames(), v.minLength(1, "must name at least one model")), [...CLAUDE_DEFAULT_MODELS]),
});

/** `serverfs console` (docs/console.md): "" means a fresh token per start / no separate metrics token. */
const ConsoleSchema = v.strictObject({
  token_file: v.optional(v.string(), ""),
  metrics_token_file: v.optional(v.string(), ""),
});

/** docs/configuration.md `[audit]`: a copy of the audit lines in a file, rotated at `max_bytes`, `keep` old files. */
const AuditSchema = v.strictObject({
  file: v.optional(v.string(), ""),
  max_bytes: v.optional(int(4096), 16777216),
  keep: v.optional(int(1, 100), 5),
});

export const ConfigFileSchema = v.strictObject({
  server: v.optional(ServerSchema, {}),
  audit: v.optional(AuditSchema, {}),
  defaults: v.optional(DefaultsSchema, {}),
  limits: v.optional(LimitsSchema, {}),
  workdirs: v.optional(v.pipe(v.array(WorkdirSchema), v.maxLength(16, "at most 16 workdirs")), []),
  bridge: v.optional(BridgeSchema, {}),
  runtimes: v.optional(v.strictObject({ codex: v.optional(CodexSchema, {}), claude: v.optional(ClaudeSchema, {}) }), {}),
  console: v.optional(ConsoleSchema, {}),
});

export type ConfigFile = v.InferOutput<typeof ConfigFileSchema>;
export type Limits = ConfigFile["limits"];
export type BridgeSettings = ConfigFile["bridge"];
export type Policy = typeof POLICY_DEFAULTS;
