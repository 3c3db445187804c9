/**
 * The one place OS errors become contract codes (docs/mcp-tools.md#os-errors). Raw OS messages embed
 * paths, so they never travel further than this module: only the code and a fixed phrase do.
 */
import { type ErrorCode, ServerFsError } from "../errors.ts";

export type Side = "read" | "mutation";

export const osCode = (e: unknown): string | undefined =>
  typeof e === "object" && e !== null && "code" in e && typeof e.code === "string" ? e.code : undefined;

/** Out of file descriptors: the one condition walks and search never skip past (RESOURCE_EXHAUSTED). */
export const isExhaustion = (e: unknown): boolean => {
  const code = osCode(e);
  return code === "EMFILE" || code === "ENFILE";
};

const PHRASES: Partial<Record<ErrorCode, string>> = {
  PATH_NOT_FOUND: "does not exist",
  PARENT_NOT_FOUND: "parent directory does not exist",
  NOT_A_DIRECTORY: "is not a directory",
  SYMLINK_NOT_ALLOWED: "is a symlink, which is not followed",
  ACCESS_DENIED: "access denied",
  UNSUPPORTED_FILE_TYPE: "is a FIFO, socket or device",
  RESOURCE_EXHAUSTED: "out of file descriptors",
  MUTATION_IO_ERROR: "the filesystem refused the change",
  PATH_ALREADY_EXISTS: "already exists",
  DIRECTORY_NOT_EMPTY: "is not empty",
};

export function codeForOsError(e: unknown, side: Side): ErrorCode {
  switch (osCode(e)) {
    case "ENOENT":
      return "PATH_NOT_FOUND";
    case "ENOTDIR":
      return "NOT_A_DIRECTORY";
    case "ELOOP":
      return "SYMLINK_NOT_ALLOWED";
    case "EACCES":
    case "EPERM":
      return "ACCESS_DENIED";
    case "ENXIO":
      return "UNSUPPORTED_FILE_TYPE";
    case "EMFILE":
    case "ENFILE":
      return "RESOURCE_EXHAUSTED";
    default:
      return side === "read" ? "ACCESS_DENIED" : "MUTATION_IO_ERROR";
  }
}

/** A ServerFsError for an OS failure, prefixed with the normalized `alias:path` it concerns. */
export function osError(e: unknown, side: Side, where: string, override?: Partial<Record<string, ErrorCode>>): ServerFsError {
  if (e instanceof ServerFsError) return e;
  const os = osCode(e);
  const code = (os && override?.[os]) || codeForOsError(e, side);
  return new ServerFsError(code, `${where} ${PHRASES[code] ?? "failed"}`, { cause: e });
}

export function phrase(code: ErrorCode): string {
  return PHRASES[code] ?? "failed";
}

const REASONS: Record<string, string> = {
  ENOENT: "no such file or directory",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  EISDIR: "it is a directory",
  ENOTDIR: "a parent is not a directory",
  EROFS: "read-only file system",
  ENOSPC: "no space left on the device",
  ELOOP: "too many symbolic links",
  EIO: "input/output error",
};

/**
 * A short reason for an operator's message (config file, state directory), never for an MCP client:
 * the errno's meaning in words, without the raw message (which embeds the path and the syscall).
 */
export function errnoReason(e: unknown): string {
  const code = osCode(e);
  return code === undefined ? "unknown error" : (REASONS[code] ?? code);
}
