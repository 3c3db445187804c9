#!/usr/bin/env bun
import { PROTOCOL_VERSION } from "../shared/bridge-protocol/envelope.ts";
/**
 * `serverfs` command dispatch (docs/configuration.md). Exit codes: 0 success, 2 configuration or usage error
 * (`serverfs: configuration error: ...` on stderr), 1 any other failure. stdout is reserved for
 * protocol (mcp) or for the command's own output.
 */
import { ConfigError } from "../shared/config/load.ts";
import { suggestion } from "../shared/did-you-mean.ts";
import { isServerFsError } from "../shared/errors.ts";
import { isCompiled } from "../shared/self-command.ts";
import { VERSION } from "../shared/version.ts";
import { booleanFlag, type ParsedArgs, parseArgs, stringFlag, UsageError } from "./args.ts";
import { COMMANDS, type CommandSpec, commandNames, commandUsage, HELP_FLAGS, programUsage } from "./commands.ts";

/** Flags that take a value, in any command: their values are not the command word. */
const VALUE_FLAGS = new Set(Object.values(COMMANDS).flatMap((c) => Object.keys(c.flags).filter((f) => c.flags[f]!.value)));
const PROGRAM_FLAGS = { ...HELP_FLAGS, "--version": { help: "" }, "-V": { help: "" }, "--json": { help: "" } };

const print = (text: string) => process.stdout.write(`${text}\n`);

function printVersion(json: boolean): number {
  if (!json) print(`serverfs ${VERSION}`);
  else {
    const details = {
      name: "serverfs",
      version: VERSION,
      protocol_version: PROTOCOL_VERSION,
      bun: Bun.version,
      compiled: isCompiled(),
      platform: process.platform,
      arch: process.arch,
    };
    print(JSON.stringify(details));
  }
  return 0;
}

/** The first word that is neither a flag nor a flag's value. */
function commandWord(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith("-")) return a;
    if (VALUE_FLAGS.has(a)) i++;
  }
  return undefined;
}

/** Parses `argv` for the command it names: its flags only, at most its number of words. */
function commandArgs(argv: string[]): { name: string; spec: CommandSpec; args: ParsedArgs } | { program: ParsedArgs } {
  const name = commandWord(argv);
  if (name === undefined) {
    const asked = argv.some((a) => a in PROGRAM_FLAGS && a !== "--json");
    const first = argv[0];
    if (first !== undefined && !asked) {
      const known = Object.values(COMMANDS).some((c) => first.split("=")[0]! in c.flags);
      throw new UsageError(known ? `${first} needs a command before it` : `unknown option ${first}`);
    }
    return { program: parseArgs(argv, PROGRAM_FLAGS) };
  }
  const spec = COMMANDS[name];
  if (spec === undefined) throw new UsageError(`unknown command ${name}${suggestion(name, commandNames())}`);
  const args = parseArgs(argv, { ...spec.flags, ...HELP_FLAGS }, name);
  if (args.command.length - 1 > spec.maxWords && !args.flags.has("--help") && !args.flags.has("-h")) {
    throw new UsageError(`unexpected argument ${args.command[spec.maxWords + 1]}`, name);
  }
  return { name, spec, args };
}

async function main(argv: string[]): Promise<number> {
  // the fake provider is started by the Bridge, never by a person: its arguments are its own
  if (argv[0] === "__fake-provider") {
    const { runFakeProvider } = await import("../workers/fake-provider.ts");
    await runFakeProvider();
    return 0;
  }
  const parsed = commandArgs(argv);
  if ("program" in parsed) {
    const { flags } = parsed.program;
    if (flags.has("--version") || flags.has("-V")) return printVersion(flags.has("--json"));
    if (flags.has("--help") || flags.has("-h")) {
      print(programUsage());
      return 0;
    }
    process.stderr.write(`${programUsage()}\n`);
    return 2;
  }
  const { name, args } = parsed;
  if (args.flags.has("--help") || args.flags.has("-h")) {
    print(commandUsage(name));
    return 0;
  }
  const configPath = stringFlag(args, "--config");
  const run = RUNNERS[name];
  if (run !== undefined) return run(args, configPath);
  if (name === "version") return printVersion(booleanFlag(args, "--json"));
  // help [COMMAND]
  const topic = args.command[1];
  if (topic === undefined) print(programUsage());
  else if (COMMANDS[topic] === undefined) throw new UsageError(`unknown command ${topic}${suggestion(topic, commandNames())}`, "help");
  else print(commandUsage(topic));
  return 0;
}

type Runner = (args: ParsedArgs, configPath: string | undefined) => Promise<number>;

/**
 * Each command's module loads only when that command runs, so a `serverfs mcp` start never parses the
 * Bridge or the operator code. -1: the process stays up serving until its transport ends.
 */
const RUNNERS: Record<string, Runner> = {
  mcp: async (args, configPath) => {
    const { prepareMcp } = await import("./mcp/startup.ts");
    const http = stringFlag(args, "--http");
    const rt = prepareMcp(configPath, http === undefined ? "stdio" : "http");
    if (http !== undefined) await (await import("./mcp/http.ts")).serveHttp(rt, http);
    else await (await import("./mcp/stdio.ts")).serveStdio(rt);
    return -1;
  },
  bridge: async (_, configPath) => (await import("./bridge/startup.ts")).runBridge(configPath),
  tasks: async (args, configPath) => (await import("./operator/tasks/index.ts")).runTasks(args, configPath),
  doctor: async (_, configPath) => (await import("./operator/doctor.ts")).runDoctor(configPath),
  recovery: async (args, configPath) => (await import("./operator/recovery.ts")).runRecovery(args, configPath),
  demo: async () => (await import("./demo/run.ts")).runDemo(),
  init: async (args, configPath) => (await import("./operator/init.ts")).runInit(args, configPath),
  connect: async (args, configPath) => (await import("./operator/init.ts")).runConnect(args, configPath),
  backup: async (args, configPath) => (await import("./operator/backup.ts")).runBackup(args, configPath),
  console: async (args, configPath) => (await import("./console/command.ts")).runConsole(args, configPath),
};

/** What follows a usage error: the command's synopsis (or the program's), and where the rest is. */
function usageHint(command: string | undefined): string {
  if (command === undefined) return "run `serverfs --help` for the commands";
  const lines = COMMANDS[command]!.usage.map((u) => `  serverfs ${u}`);
  return [`usage:`, ...lines, `run \`serverfs help ${command}\` for every option`].join("\n");
}

if (import.meta.main) {
  main(process.argv.slice(2)).then(
    (code) => {
      if (code >= 0) process.exit(code);
    },
    (e) => {
      if (e instanceof ConfigError) {
        process.stderr.write(`serverfs: configuration error: ${e.message}\n`);
        process.exit(2);
      }
      if (e instanceof UsageError) {
        process.stderr.write(`serverfs: usage error: ${e.message}\n${usageHint(e.command)}\n`);
        process.exit(2);
      }
      // a coded failure (e.g. BRIDGE_ALREADY_RUNNING at Bridge startup) keeps its code
      process.stderr.write(`serverfs: ${isServerFsError(e) ? e.toText() : e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    },
  );
}
