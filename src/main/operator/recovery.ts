/**
 * `serverfs recovery list [--json]` and `serverfs recovery clear --slot N --confirm [--json]`
 * (docs/task-model.md#reconciliation, docs/cli.md): the operator's view of the active-slot guards and the
 * explicit, audited override for one that reconciliation could not resolve.
 *
 * The guard keeps exactly one writer, whoever holds the instance lock: `clear` first tries to take
 * that lock — free means no Bridge runs, and the command clears the guard itself while holding it;
 * held means a Bridge runs, and `recovery.clear` goes over its socket. Offline it also takes the lock
 * directory's lock, so a Bridge of another state directory on that lock directory is not overridden. `list` changes nothing: it
 * asks a Bridge that answers on the socket, else looks at the lock directory and database directly.
 *
 * Exit codes: 0 done (also "no guard"), 2 usage (`--confirm` missing) or INVALID_WORKDIR_SLOT, 1 any
 * other coded failure (WORKDIR_BUSY: a live write task holds the slot).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { openAuditLog } from "../../shared/audit-file.ts";
import { BridgeClient } from "../../shared/bridge-protocol/client.ts";
import type { ClearResult, GuardListing } from "../../shared/bridge-protocol/results.ts";
import { type Config, loadConfig } from "../../shared/config/load.ts";
import { suggestion } from "../../shared/did-you-mean.ts";
import { isServerFsError, ServerFsError } from "../../shared/errors.ts";
import { checkSlot } from "../../shared/leases/lock-files.ts";
import { clearGuard, listGuards } from "../../shared/leases/operator-override.ts";
import { DB_FILE, Store } from "../../shared/store/index.ts";
import { booleanFlag, type ParsedArgs, stringFlag, UsageError } from "../args.ts";
import { acquireInstanceLock, acquireLockDirLock, type InstanceLock } from "../bridge/instance-lock.ts";
import { printJson, printLine, runCommand, table } from "./output.ts";

export async function runRecovery(args: ParsedArgs, configPath: string | undefined): Promise<number> {
  const sub = args.command[1];
  const json = booleanFlag(args, "--json");
  if (sub === "list") {
    const config = loadConfig({ role: "operator", configPath });
    return runCommand(async () => {
      const guards = await listing(config);
      if (json) printJson({ guards });
      else printListing(guards);
      return 0;
    });
  }
  if (sub === "clear") {
    if (!booleanFlag(args, "--confirm")) throw new UsageError("recovery clear needs --confirm", "recovery");
    const slot = slotArgument(args);
    try {
      checkSlot(slot);
    } catch (e) {
      if (!isServerFsError(e)) throw e;
      process.stderr.write(`serverfs: ${e.toText()}\n`);
      return 2;
    }
    const config = loadConfig({ role: "operator", configPath });
    return runCommand(async () => {
      const result = await clear(config, slot);
      if (json) printJson(result);
      else printLine(clearedLine(result));
      return 0;
    });
  }
  throw new UsageError(sub === undefined ? "recovery needs list or clear" : `unknown recovery command ${sub}${suggestion(sub, ["list", "clear"])}`, "recovery");
}

function slotArgument(args: ParsedArgs): number {
  const raw = stringFlag(args, "--slot");
  if (raw === undefined) throw new UsageError("recovery clear needs --slot N", "recovery");
  // any whole number parses: checkSlot gives an out-of-range slot its coded error
  if (!/^-?\d+$/.test(raw)) throw new UsageError("--slot needs a whole number", "recovery");
  return Number(raw);
}

/** A store for a look at the task rows, or null when no Bridge ever made a database here. */
function openStoreIfAny(config: Config): Store | null {
  return existsSync(join(config.bridge.stateDir, DB_FILE)) ? Store.open(config.bridge.stateDir) : null;
}

async function listing(config: Config): Promise<GuardListing[]> {
  try {
    return (await BridgeClient.fromConfig(config).call("recovery.list", {})).guards;
  } catch (e) {
    if (!(isServerFsError(e) && e.code === "AGENT_BRIDGE_UNAVAILABLE")) throw e;
  }
  // no Bridge answers: a read-only look
  const store = openStoreIfAny(config);
  try {
    return listGuards(config.bridge.lockDir, store);
  } finally {
    store?.close();
  }
}

async function clear(config: Config, slot: number): Promise<ClearResult> {
  let instance: ReturnType<typeof acquireInstanceLock>;
  try {
    instance = acquireInstanceLock(config.bridge.stateDir);
  } catch (e) {
    if (!(e instanceof ServerFsError && e.code === "BRIDGE_ALREADY_RUNNING")) throw e;
    return BridgeClient.fromConfig(config).call("recovery.clear", { slot, confirm: true });
  }
  // no Bridge runs, and none can start while this holds the instance lock; nor may one of another
  // state directory hold this lock directory (BRIDGE_ALREADY_RUNNING names it)
  let store: Store | null = null;
  let lockDirLock: InstanceLock | null = null;
  try {
    if (existsSync(config.bridge.lockDir)) lockDirLock = acquireLockDirLock(config.bridge.lockDir, config.bridge.stateDir);
    store = openStoreIfAny(config);
    return clearGuard({ lockDir: config.bridge.lockDir, store, audit: openAuditLog(config.server.log_level, config.audit) }, slot);
  } finally {
    store?.close();
    lockDirLock?.release();
    instance.release();
  }
}

function clearedLine(r: ClearResult): string {
  if (!r.cleared) return `slot ${r.slot}: no active-slot guard; nothing to clear`;
  return r.task_id === null ? `slot ${r.slot}: invalid guard cleared` : `slot ${r.slot}: guard of task ${r.task_id} cleared`;
}

/** "UNKNOWN, provider active" — the latest `task.reconciled` verdict in words. */
function verdictText(v: Record<string, unknown> | null): string {
  if (v === null) return "-";
  const active = v["provider_active"];
  const provider = active === true ? "provider active" : active === false ? "provider gone" : "provider unknown";
  return v["status"] === "OPERATOR_CLEARED" ? "OPERATOR_CLEARED" : `${String(v["status"])}, ${provider}`;
}

function printListing(guards: GuardListing[]): void {
  if (guards.length === 0) {
    printLine("no active-slot guards");
    return;
  }
  const rows = guards.map((g) =>
    g.task_id === null
      ? [String(g.slot), "(invalid guard)", "-", "-", "-", "-", "-"]
      : [
          String(g.slot),
          g.task_id,
          g.runtime ?? "-",
          g.workdir_alias ?? "-",
          g.created_at ?? "-",
          g.task_status ?? "(no task row)",
          verdictText(g.last_verdict),
        ],
  );
  for (const line of table(rows, ["SLOT", "TASK", "RUNTIME", "WORKDIR", "CREATED", "STATUS", "VERDICT"])) printLine(line);
}
