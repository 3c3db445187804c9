/**
 * The common mutation pipeline (mcp-surface.md §6.1), the one place a mutation is authorized.
 * Every mutation tool states its argument checks and its filesystem phase; this module runs the
 * steps around them in the contract's order. The filesystem phase is synchronous from the moment
 * the lock is granted until the lease is released, so a process exit can never interleave with
 * it: the target is always in its old or its new state.
 */
import { ServerFsError } from "../../../shared/errors.ts";
import { withParent } from "../../../shared/fs/dir-handle.ts";
import { osCode, osError } from "../../../shared/fs/os-errors.ts";
import type { Workspace } from "../../../shared/workspace.ts";
import { type McpDeps, requireWorkspace } from "../deps.ts";
import type { ToolCall } from "../tool.ts";
import { syncDirectoryAfterCommit } from "./directory-sync.ts";
import { mutationLock } from "./mutation-lock.ts";
import { takeWriterLease } from "./writer-lease.ts";

/** A confined, non-root mutation target. */
export interface MutationTarget {
  ws: Workspace;
  /** The normalized relative path. */
  path: string;
  segments: string[];
  /** `alias:path`, the message prefix. */
  where: string;
}

/** What the filesystem phase may do beyond plain handle calls. */
export interface MutationScope extends MutationTarget {
  /**
   * Walks the parent chain by handle and runs `fn` on the parent's handle and the final name; a
   * missing parent segment is `missing` (PARENT_NOT_FOUND for creates, PATH_NOT_FOUND otherwise).
   */
  inParent<T>(missing: "PARENT_NOT_FOUND" | "PATH_NOT_FOUND", fn: (parentFd: number, name: string) => T): T;
  /** fsyncs a directory after the commit; a failure is logged (directory_fsync_failed), never thrown. */
  syncDirectory(dirFd: number): void;
}

export interface MutationSpec<T> {
  tool: string;
  workdir: string;
  path: string;
  /** upload_binary_file only: step 4, BINARY_TRANSFER_DISABLED. */
  binary?: boolean;
  /** Step 7: the tool's argument-content checks, before any lock. */
  checkArguments?(target: MutationTarget): void;
  /** Step 10: synchronous filesystem calls only (returning a promise would break atomicity). */
  commit(scope: MutationScope): T;
}

export async function runMutation<T>(deps: McpDeps, call: ToolCall, spec: MutationSpec<T>): Promise<T> {
  const ws = requireWorkspace(deps, spec.workdir);
  if (ws.policy.read_only) throw new ServerFsError("WORKDIR_READ_ONLY", "the workdir is read-only");
  if (spec.binary && !ws.policy.binary_transfer_enabled) {
    throw new ServerFsError("BINARY_TRANSFER_DISABLED", "binary transfer is disabled for this workdir");
  }
  const { path, segments } = ws.confine(spec.path);
  call.audit["path"] = path;
  const where = ws.where(path);
  if (segments.length === 0) throw new ServerFsError("ROOT_MUTATION_NOT_ALLOWED", `${where} is the workdir root, which cannot be changed`);
  const target: MutationTarget = { ws, path, segments, where };
  spec.checkArguments?.(target);

  const releaseLock = await mutationLock.acquire();
  try {
    const { bridge } = deps.config;
    const releaseLease = bridge.enabled ? takeWriterLease(bridge.lockDir, ws.slot, where) : null;
    try {
      return spec.commit({
        ...target,
        inParent: (missing, fn) => withParent(ws.realRoot, segments, { where, side: "mutation", missing }, fn),
        syncDirectory: (dirFd) => syncDirectoryAfterCommit(dirFd, deps.audit, { tool: spec.tool, workdir: ws.alias, path }),
      });
    } catch (e) {
      // An OS error a tool did not map itself is still a mutation-side failure (§4.6).
      if (!(e instanceof ServerFsError) && osCode(e)?.startsWith("E")) throw osError(e, "mutation", where);
      throw e;
    } finally {
      releaseLease?.();
    }
  } finally {
    releaseLock();
  }
}
