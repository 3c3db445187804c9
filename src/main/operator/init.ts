/**
 * `serverfs init [DIR…] [--write] [--force] [--config F]` and `serverfs connect HOST [--write]`
 * (docs/hosts.md): from nothing to a client that can read the project. `init` writes the commented
 * starter config (each DIR a workdir, the current directory when none is given) to the per-user
 * location, creates the directories the Bridge and the MCP server use with their modes, runs the
 * `doctor` checks on it, and prints each host's setup with the real paths; `connect` prints (or,
 * with `--write`, applies) one host's.
 */
import { existsSync, realpathSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { findConfigFile, loadConfig, userConfigPath } from "../../shared/config/load.ts";
import { suggestion } from "../../shared/did-you-mean.ts";
import { ServerFsError } from "../../shared/errors.ts";
import { PRIVATE_DIR } from "../../shared/fs/modes.ts";
import { writePrivateFile } from "../../shared/fs/private-file.ts";
import { ensurePrivateDir, prepareLockDir } from "../../shared/leases/lock-files.ts";
import { booleanFlag, type ParsedArgs, UsageError } from "../args.ts";
import { runDoctor } from "./doctor.ts";
import { applyHostSetup, auditFileHint, HOSTS, type Host, hostSetup } from "./host-setup.ts";
import { printLine } from "./output.ts";
import { starterConfig, starterWorkdirs } from "./starter-config.ts";

function directoryArgument(word: string): string {
  const abs = resolve(word);
  let isDir = false;
  try {
    isDir = statSync(abs).isDirectory();
  } catch {
    throw new UsageError(`${abs} does not exist`, "init");
  }
  if (!isDir) throw new UsageError(`${abs} is not a directory`, "init");
  // the real path: a workdir's root is opened as it is, and a later symlink swap must not move it
  return realpathSync(abs);
}

export async function runInit(args: ParsedArgs, configPath: string | undefined): Promise<number> {
  const words = args.command.slice(1);
  const dirs = (words.length > 0 ? words : ["."]).map(directoryArgument);
  if (dirs.length > 16) throw new UsageError("at most 16 directories (one per slot)", "init");
  const target = resolve(configPath ?? userConfigPath());
  if (existsSync(target) && !booleanFlag(args, "--force")) {
    throw new ServerFsError("PATH_ALREADY_EXISTS", `${target} already exists; run with --force to replace it, or edit it`);
  }
  const workdirs = starterWorkdirs(dirs, booleanFlag(args, "--write"));
  writePrivateFile(target, starterConfig(workdirs));
  const config = loadConfig({ role: "bridge", configPath: target });
  const unsafe = (phrase: string) => new ServerFsError("STATE_DIR_UNSAFE", phrase);
  ensurePrivateDir(config.bridge.stateDir, PRIVATE_DIR, null, unsafe);
  ensurePrivateDir(dirname(config.bridge.socketPath), PRIVATE_DIR, null, unsafe);
  prepareLockDir(config.bridge.lockDir, null);

  printLine(`wrote ${target}`);
  for (const w of workdirs) printLine(`  workdir ${w.alias}: ${w.path} (${w.writable ? "read-write" : "read-only"})`);
  printLine();
  printLine("Checks (serverfs doctor):");
  const verdict = await runDoctor(target);
  printLine();
  printLine("Connect an MCP client:");
  for (const host of HOSTS) {
    printLine();
    printLine(hostSetup(host, target));
  }
  printLine();
  printLine(auditFileHint(target));
  return verdict;
}

export async function runConnect(args: ParsedArgs, configPath: string | undefined): Promise<number> {
  const host = args.command[1];
  if (host === undefined) throw new UsageError(`connect needs a host: ${HOSTS.join(", ")}`, "connect");
  if (!(HOSTS as readonly string[]).includes(host)) throw new UsageError(`unknown host ${host}${suggestion(host, HOSTS)}`, "connect");
  // the host starts the server later, from anywhere: it gets the config file's absolute path
  const target = resolve(findConfigFile({ role: "operator", configPath }));
  const config = loadConfig({ role: "mcp", configPath: target });
  const hint = config.audit === null ? [auditFileHint(target)] : [];
  if (!booleanFlag(args, "--write")) {
    for (const l of [hostSetup(host as Host, target), ...hint]) printLine(l);
    return 0;
  }
  const outcome = await applyHostSetup(host as Host, target, { autoApprove: booleanFlag(args, "--auto-approve") });
  for (const l of ["done" in outcome ? outcome.done : outcome.unchanged, ...hint]) printLine(l);
  return 0;
}
