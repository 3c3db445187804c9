/**
 * Storage faults (docs/reliability.md "The Bridge under faults"): the disk is full, failing or
 * read-only, or the database stayed locked past its busy timeout. They end the affected task or
 * request with BRIDGE_STORAGE_ERROR (AGENT_RESULT_STORAGE_ERROR for the result spool) and never the
 * Bridge; they are told apart from other failures here, in one place.
 *
 * Offers: `isStorageFault(e)`, `storageError()`.
 */
import { isServerFsError, ServerFsError } from "./errors.ts";

/** SQLite's primary codes for a file it cannot write (extended codes carry them as a prefix). */
const SQLITE_STORAGE = /^SQLITE_(FULL|IOERR|BUSY|LOCKED|CANTOPEN|READONLY)/;
/** errno codes of a file system that cannot take the write. */
const FS_STORAGE = new Set(["ENOSPC", "EDQUOT", "EIO", "EROFS"]);

export function isStorageFault(e: unknown): boolean {
  if (isServerFsError(e)) return e.code === "BRIDGE_STORAGE_ERROR";
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return false;
  return SQLITE_STORAGE.test(code) || FS_STORAGE.has(code);
}

/** The one error a storage fault becomes; it names no path and no SQLite detail (`cause`, the fault, is for the debug log only). */
export const storageError = (cause?: unknown): ServerFsError =>
  new ServerFsError("BRIDGE_STORAGE_ERROR", "the Bridge could not write its state (the disk is full or failing, or the database is locked)", { cause });
