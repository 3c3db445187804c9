/**
 * `serverfs backup FILE` (docs/deployment.md "Backups"): a consistent copy of the Bridge's state
 * database, taken while the Bridge runs (or not), written 0600, never over an existing file. CLI only:
 * there is no RPC for it, so nothing reachable from an MCP client can copy the state.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadConfig } from "../../shared/config/load.ts";
import { ServerFsError } from "../../shared/errors.ts";
import { DB_FILE, Store } from "../../shared/store/index.ts";
import { booleanFlag, type ParsedArgs, UsageError } from "../args.ts";
import { printJson, printLine } from "./output.ts";

export function runBackup(args: ParsedArgs, configPath: string | undefined): number {
  const file = args.command[1];
  if (file === undefined) throw new UsageError("backup needs the file to write", "backup");
  const config = loadConfig({ role: "operator", configPath });
  const { stateDir } = config.bridge;
  if (!existsSync(join(stateDir, DB_FILE))) {
    throw new ServerFsError("PATH_NOT_FOUND", `bridge.state_dir ${stateDir} holds no state database yet (has the Bridge ever run with this config?)`);
  }
  const target = resolve(file);
  const store = Store.open(stateDir);
  try {
    const report = store.backupTo(target);
    if (booleanFlag(args, "--json")) printJson({ file: target, ...report });
    else printLine(`backed up ${report.tasks} tasks and ${report.events} events (${report.bytes} bytes) to ${target}`);
    return 0;
  } finally {
    store.close();
  }
}
