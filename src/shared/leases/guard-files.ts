/**
 * The active-slot guard `lock_dir/active/NN` (docs/task-model.md#lease-files-and-the-active-slot-guard): a file only the Bridge writes,
 * published before a workspace-write provider starts and removed only once that provider's whole
 * process group is proven gone. It outlives a crash, which is the point: while it exists and nobody
 * holds the lock, every MCP mutation of the slot fails closed with WORKDIR_RECOVERY_REQUIRED.
 */
import { closeSync, constants, fchownSync, fsyncSync, lstatSync, openSync, readdirSync, readFileSync, rmdirSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { canonicalJson } from "../canonical-json.ts";
import { ServerFsError } from "../errors.ts";
import { atomicWrite, withDirectory } from "../fs/atomic-write.ts";
import { O_CLOEXEC } from "../fs/dir-handle.ts";
import { fileMode, ownUid } from "../fs/modes.ts";
import { osCode } from "../fs/os-errors.ts";
import { random16Hex } from "../ids.ts";
import { isStorageFault, storageError } from "../storage-fault.ts";
import { slotName } from "./lock-files.ts";

export interface Guard {
  schema_version: 1;
  slot: number;
  task_id: string;
  runtime: string;
  workdir_alias: string;
  correlation_id: string | null;
  native_session_id: string | null;
  native_turn_id: string | null;
  provider_pgid: number | null;
  provider_start_time: number | null;
  provider_mark: string | null;
  created_at: string;
  updated_at: string;
}

export type GuardRead = { kind: "absent" } | { kind: "valid"; guard: Guard } | { kind: "invalid" };

export const activeDir = (lockDir: string) => join(lockDir, "active");
export const guardPath = (lockDir: string, slot: number) => join(activeDir(lockDir), slotName(slot));

const PROVIDER_FIELDS = ["native_session_id", "native_turn_id", "provider_pgid", "provider_start_time", "provider_mark"] as const;

/**
 * Writes `guard` as active/NN (atomic-write.ts) by a temp file `.NN.<hex>.tmp`, which startup
 * recognises as a leftover: "create" links it (an existing guard is never replaced), "replace"
 * renames it over the guard. With group sharing the group is set before the first byte.
 */
function writeGuard(lockDir: string, guard: Guard, sharingGid: number | null, publish: "create" | "replace"): void {
  const name = slotName(guard.slot);
  withDirectory(activeDir(lockDir), (dirFd) =>
    atomicWrite(dirFd, name, Buffer.from(`${canonicalJson(guard)}\n`, "utf8"), {
      tempName: `.${name}.${random16Hex()}.tmp`,
      publish,
      mode: fileMode(sharingGid),
      ...(sharingGid === null ? {} : { beforeContent: (fd: number) => fchownSync(fd, ownUid(), sharingGid) }),
    }),
  );
}

/** Create-only publish, so an existing guard is never replaced; a full or failing disk is BRIDGE_STORAGE_ERROR. */
export function publishGuard(lockDir: string, guard: Guard, sharingGid: number | null): void {
  try {
    writeGuard(lockDir, guard, sharingGid, "create");
  } catch (e) {
    if (osCode(e) === "EEXIST") {
      throw new ServerFsError("WORKDIR_RECOVERY_REQUIRED", "the workdir slot has an unresolved active-slot guard");
    }
    if (isStorageFault(e)) throw storageError(e);
    throw new ServerFsError("BRIDGE_SCHEDULING_FAILED", "the active-slot guard could not be published");
  }
}

export function readGuard(lockDir: string, slot: number): GuardRead {
  const p = guardPath(lockDir, slot);
  let text: string;
  try {
    const st = lstatSync(p);
    if (!st.isFile()) return { kind: "invalid" };
    const fd = openSync(p, constants.O_RDONLY | constants.O_NOFOLLOW | O_CLOEXEC);
    try {
      text = readFileSync(fd, "utf8");
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    return (e as { code?: string }).code === "ENOENT" ? { kind: "absent" } : { kind: "invalid" };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { kind: "invalid" };
  }
  if (typeof raw !== "object" || raw === null) return { kind: "invalid" };
  const g = raw as Record<string, unknown>;
  if (g["schema_version"] !== 1 || g["slot"] !== slot || typeof g["task_id"] !== "string" || typeof g["runtime"] !== "string") {
    return { kind: "invalid" };
  }
  for (const f of PROVIDER_FIELDS) if (g[f] === undefined) g[f] = null;
  return { kind: "valid", guard: g as unknown as Guard };
}

/** Rewrites the guard with recorded provider facts, only if it still names `taskId`. */
export function updateGuard(lockDir: string, slot: number, taskId: string, patch: Partial<Guard>, sharingGid: number | null): boolean {
  const current = readGuard(lockDir, slot);
  if (current.kind !== "valid" || current.guard.task_id !== taskId) return false;
  const next: Guard = { ...current.guard, updated_at: new Date().toISOString() };
  for (const f of PROVIDER_FIELDS) {
    const v = patch[f];
    if (v !== undefined && v !== null) (next as unknown as Record<string, unknown>)[f] = v;
  }
  try {
    writeGuard(lockDir, next, sharingGid, "replace");
  } catch (e) {
    if (isStorageFault(e)) throw storageError(e);
    return false;
  }
  return true;
}

/**
 * Removes the guard only when it names `taskId`, or, for the operator override (`taskId` null),
 * whatever entry is there: unlink never follows a symlink, and an empty directory is removed too.
 */
export function removeGuard(lockDir: string, slot: number, taskId: string | null): boolean {
  if (taskId !== null) {
    const current = readGuard(lockDir, slot);
    if (current.kind !== "valid" || current.guard.task_id !== taskId) return false;
  }
  const p = guardPath(lockDir, slot);
  try {
    unlinkSync(p);
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (taskId !== null || (code !== "EISDIR" && code !== "EPERM")) return false;
    try {
      rmdirSync(p);
    } catch {
      return false;
    }
  }
  withDirectory(activeDir(lockDir), fsyncSync);
  return true;
}

/** Slots that have a guard entry of any kind (valid or not). */
export function guardedSlots(lockDir: string): number[] {
  let names: string[];
  try {
    names = readdirSync(activeDir(lockDir));
  } catch {
    return [];
  }
  return names
    .filter((n) => /^(0[1-9]|1[0-6])$/.test(n))
    .map(Number)
    .sort((a, b) => a - b);
}

/** Startup: temporary guard files older than the instance lock are leftovers of a crash. */
export function removeLeftoverGuardTemps(lockDir: string, olderThanMs: number): void {
  let names: string[];
  try {
    names = readdirSync(activeDir(lockDir));
  } catch {
    return;
  }
  for (const n of names) {
    if (!/^\.\d\d\..*\.tmp$/.test(n)) continue;
    const p = join(activeDir(lockDir), n);
    try {
      if (lstatSync(p).mtimeMs < olderThanMs) unlinkSync(p);
    } catch {
      // vanished meanwhile
    }
  }
}
