/**
 * The directory fsync that makes a committed link, rename, unlink, mkdir or rmdir durable
 * (docs/mcp-tools.md#atomic-publish). It runs after the commit, so its failure cannot undo the change: the call
 * still succeeds and the failure is logged as `directory_fsync_failed` (WARN).
 */
import { fsyncSync } from "node:fs";
import type { AuditLog } from "../../../shared/audit.ts";

export interface FsyncFailureFields {
  tool: string;
  workdir: string;
  path: string;
}

/** fsyncs the directory held open by `dirFd` (the handle the commit went through). */
export function syncDirectoryAfterCommit(dirFd: number, audit: AuditLog, fields: FsyncFailureFields): void {
  try {
    fsyncSync(dirFd);
  } catch {
    audit.warn("directory_fsync_failed", { ...fields });
  }
}
