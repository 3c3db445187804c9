/**
 * The common mutation pipeline (docs/mcp-tools.md#mutation-pipeline), the one place a mutation is authorized.
 * Every mutation tool states its argument checks and its filesystem phase; this module runs the
 * steps around them in the contract's order. The last revision check and the commit run
 * synchronously inside `exclusive`, under the workdir's cross-process lock (workdir-lock.ts), so a
 * process exit can never interleave with them: the target is always in its old or its new state,
 * and an exit while waiting for that lock leaves at most a stale temp file (temp-files.ts).
 */
import { ServerFsError } from "../../../shared/errors.ts";
import { withParent } from "../../../shared/fs/dir-handle.ts";
import { osCode, osError } from "../../../shared/fs/os-errors.ts";
import type { Workspace } from "../../../shared/workspace.ts";
import { type McpDeps, requireWorkspace } from "../deps.ts";
import type { ToolCall } from "../tool.ts";
import { syncDirectoryAfterCommit } from "./directory-sync.ts";
import { mutationLock } from "./mutation-lock.ts";
import { lockWorkdir } from "./workdir-lock.ts";
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
  /**
   * Runs `fn` holding the workdir's cross-process mutation lock, waiting for it at most
   * `[limits] mutation_lock_wait_ms` (then WORKDIR_BUSY). Every mutation runs its last revision
   * check and its commit in here; `fn` is synchronous so nothing else interleaves.
   */
  exclusive<R>(fn: () => R): Promise<R>;
}

export interface MutationSpec<T> {
  tool: string;
  workdir: string;
  path: string;
  /** upload_binary_file only: step 4, BINARY_TRANSFER_DISABLED. */
  binary?: boolean;
  /** Step 7: the tool's argument-content checks, before any lock. */
  checkArguments?(target: MutationTarget): void;
  /** Step 10: the filesystem phase; its revision check and commit go through `scope.exclusive`. */
  commit(scope: MutationScope): Promise<T>;
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
      return await spec.commit({
        ...target,
        inParent: (missing, fn) => withParent(ws.realRoot, segments, { where, side: "mutation", missing }, fn),
        syncDirectory: (dirFd) => syncDirectoryAfterCommit(dirFd, deps.audit, { tool: spec.tool, workdir: ws.alias, path }),
        exclusive: async (fn) => {
          const release = await lockWorkdir(ws.realRoot, deps.config.limits.mutation_lock_wait_ms, where);
          try {
            return fn();
          } finally {
            release();
          }
        },
      });
    } catch (e) {
      // An OS error a tool did not map itself is still a mutation-side failure (docs/mcp-tools.md#os-errors).
      if (!(e instanceof ServerFsError) && osCode(e)?.startsWith("E")) throw osError(e, "mutation", where);
      throw e;
    } finally {
      releaseLease?.();
    }
  } finally {
    releaseLock();
  }
}
