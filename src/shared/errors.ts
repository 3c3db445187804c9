/**
 * The one error type of ServerFS. Every failure a user can cause carries exactly one code from
 * the contract (docs/mcp-tools.md#error-codes, docs/errors.md#bridge-rpc-errors) and a short fixed English message that never
 * holds host paths, contents, prompts or secrets.
 */

export const ERROR_CODES = [
  // general and path
  "INVALID_ARGUMENT",
  "WORKDIR_NOT_FOUND",
  "PATH_OUTSIDE_WORKDIR",
  "ACCESS_DENIED",
  "RESERVED_PATH",
  "HIDDEN_PATH_NOT_ALLOWED",
  "DENIED_PATH",
  "SYMLINK_NOT_ALLOWED",
  "PATH_NOT_FOUND",
  "NOT_A_FILE",
  "NOT_A_DIRECTORY",
  "UNSUPPORTED_FILE_TYPE",
  "RESOURCE_EXHAUSTED",
  // read
  "BINARY_FILE",
  "UNSUPPORTED_TEXT_ENCODING",
  "LINE_TOO_LARGE",
  "FILE_CHANGED_DURING_READ",
  "SCAN_LIMIT_EXCEEDED",
  "SEARCH_TIMEOUT",
  "SEARCH_FAILED",
  "RESOURCE_TOO_LARGE",
  "READ_FAILED",
  // mutation
  "WORKDIR_READ_ONLY",
  "ROOT_MUTATION_NOT_ALLOWED",
  "PATH_ALREADY_EXISTS",
  "PARENT_NOT_FOUND",
  "REVISION_CONFLICT",
  "EDIT_CONFLICT",
  "TOO_MANY_EDITS",
  "WRITE_TOO_LARGE",
  "BINARY_CONTENT_NOT_ALLOWED",
  "MULTIPLE_HARDLINKS_NOT_SUPPORTED",
  "METADATA_PRESERVATION_FAILED",
  "DIRECTORY_NOT_EMPTY",
  "MUTATION_IO_ERROR",
  "MUTATION_FAILED",
  // binary
  "BINARY_TRANSFER_DISABLED",
  "BINARY_FILE_TOO_LARGE",
  "BINARY_PAYLOAD_TOO_LARGE",
  "INVALID_BASE64",
  "EXPECTED_REVISION_REQUIRED",
  "EXPECTED_REVISION_NOT_ALLOWED",
  // writer lease
  "WORKDIR_BUSY",
  "WORKDIR_RECOVERY_REQUIRED",
  "AGENT_LOCK_UNAVAILABLE",
  "LOCK_PATH_UNSAFE",
  // agent, MCP side
  "AGENT_DISABLED",
  "AGENT_RUNTIME_NOT_ALLOWED",
  "AGENT_PROFILE_NOT_ALLOWED",
  "REQUEST_TOO_LARGE",
  "AGENT_BRIDGE_UNAVAILABLE",
  "AGENT_BRIDGE_PROTOCOL_ERROR",
  "AGENT_BRIDGE_ERROR",
  // bridge protocol and lifecycle
  "INVALID_REQUEST",
  "PROTOCOL_VERSION_UNSUPPORTED",
  "METHOD_NOT_FOUND",
  "RESPONSE_TOO_LARGE",
  "BRIDGE_PROTOCOL_ERROR",
  "PEER_NOT_AUTHORIZED",
  "SOCKET_PATH_IN_USE",
  "SOCKET_DIRECTORY_UNSAFE",
  "BRIDGE_ALREADY_RUNNING",
  "STATE_DIR_UNSAFE",
  "BRIDGE_CLOSED",
  "BRIDGE_SHUTDOWN",
  "BRIDGE_RESTARTED",
  "BRIDGE_SCHEDULING_FAILED",
  "BRIDGE_STORAGE_ERROR",
  "BRIDGE_STATE_LOST",
  "INVALID_WORKDIR_PATH",
  "WORKDIR_PATH_NOT_FOUND",
  "INVALID_WORKDIR_SLOT",
  "AGENT_RUNTIME_UNAVAILABLE",
  "AGENT_RUNTIME_NOT_READY",
  "AGENT_PROVIDER_ERROR",
  "AGENT_PROVIDER_DISCONNECTED",
  "AGENT_PROVIDER_INACTIVE",
  "AGENT_SESSION_NOT_RESUMABLE",
  "AGENT_TASK_NOT_FOUND",
  "AGENT_TASK_EXISTS",
  "AGENT_TASK_LIMIT_REACHED",
  "AGENT_TASK_TERMINAL",
  "AGENT_TASK_NOT_ACTIVE",
  "AGENT_TASK_TIMED_OUT",
  "INVALID_TASK_TRANSITION",
  "AGENT_IDEMPOTENCY_CONFLICT",
  "AGENT_PROMPT_TOO_LARGE",
  "AGENT_MESSAGE_TOO_LARGE",
  "AGENT_EVENT_TOO_LARGE",
  "AGENT_EVENT_LIMIT_REACHED",
  "AGENT_INTERACTION_TOO_LARGE",
  "AGENT_RESULT_TOO_LARGE",
  "AGENT_BUDGET_EXCEEDED",
  "AGENT_RESULT_NOT_RETRIEVABLE",
  "AGENT_RESULT_STORAGE_ERROR",
  "INVALID_RESULT_OFFSET",
  "INVALID_RESULT_LIMIT",
  "INVALID_LIMIT",
  "REQUEST_NOT_FOUND",
  "REQUEST_ALREADY_RESOLVED",
  "REQUEST_STALE",
  "REQUEST_PENDING",
  "REQUEST_EXISTS",
  "REQUEST_STATE_INVALID",
  "INVALID_APPROVAL_DECISION",
  "INVALID_QUESTION_ANSWER",
  "PERMISSION_OUTSIDE_POLICY",
  "AGENT_INTERACTION_EXPIRED",
  "AGENT_INTERACTION_TIMED_OUT",
  // configuration
  "CONFIG_INVALID",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export const ERROR_CODE_PATTERN = /^[A-Z][A-Z0-9_]{2,}$/;

export class ServerFsError extends Error {
  override readonly name = "ServerFsError";
  /**
   * `cause` is the error this one was mapped from (an OS error, an unexpected throw): kept for the
   * debug log's trace (error-trace.ts), never shown — `toText()` and the message leave it out.
   */
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** The `CODE: message` form every surface shows. */
  toText(): string {
    return `${this.code}: ${this.message}`;
  }
}

const KNOWN_CODES: ReadonlySet<string> = new Set(ERROR_CODES);

export function isErrorCode(code: string): code is ErrorCode {
  return KNOWN_CODES.has(code);
}

/** The listed code a relayed code counts as: itself when listed, else AGENT_BRIDGE_ERROR (see `RelayedError`). */
export function knownCode(code: string): ErrorCode {
  return isErrorCode(code) ? code : "AGENT_BRIDGE_ERROR";
}

/**
 * An error relayed verbatim from the Bridge (docs/mcp-tools.md#bridge-calls). Bridge codes are additive, so a
 * newer Bridge may send a code this build does not list: `relayedCode` and `toText()` always carry
 * the code as received; `code` is that same code when it is listed, else AGENT_BRIDGE_ERROR, so code
 * that switches on `code` stays exhaustive over known codes.
 */
export class RelayedError extends ServerFsError {
  readonly relayedCode: string;
  constructor(relayedCode: string, message: string) {
    super(knownCode(relayedCode), message);
    this.relayedCode = relayedCode;
  }

  override toText(): string {
    return `${this.relayedCode}: ${this.message}`;
  }
}

export function isServerFsError(e: unknown): e is ServerFsError {
  return e instanceof ServerFsError;
}
