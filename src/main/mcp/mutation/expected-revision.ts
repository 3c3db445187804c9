/**
 * Optimistic concurrency (docs/mcp-tools.md#revisions): a change applies only to the exact state the
 * client saw. Any other string, a malformed one included, is REVISION_CONFLICT.
 */
import type { BigIntStats } from "node:fs";
import { ServerFsError } from "../../../shared/errors.ts";
import { lstatAt } from "../../../shared/fs/dir-handle.ts";
import { revisionOf } from "../../../shared/fs/stat.ts";

const conflict = (where: string) => new ServerFsError("REVISION_CONFLICT", `${where} has changed since that revision; stat or read it again`);

export function requireRevision(st: BigIntStats, expected: string, where: string): void {
  if (revisionOf(st) !== expected) throw conflict(where);
}

/** Re-checks by a no-follow stat of the name right before a commit; a vanished name conflicts too. */
export function requireRevisionByName(dirFd: number, name: string, expected: string, where: string): void {
  let st: BigIntStats;
  try {
    st = lstatAt(dirFd, name);
  } catch {
    throw conflict(where);
  }
  requireRevision(st, expected, where);
}
