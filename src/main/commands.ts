/**
 * Every `serverfs` command with its flags, usage lines and an example: the one table that both the
 * parser (which flags a command accepts, how many words follow it) and `--help` read, so the help can
 * never promise a flag the parser refuses. The reference for people is docs/cli.md.
 */
import { LIMITS } from "../shared/limits.ts";
import type { FlagSpec } from "./args.ts";

export interface CommandSpec {
  summary: string;
  /** Synopsis lines, without the leading `serverfs `. */
  usage: readonly string[];
  /** What the synopsis's words mean, printed under the summary. */
  notes?: readonly string[];
  flags: Readonly<Record<string, FlagSpec>>;
  /** How many words may follow the command's name (subcommand, task id). */
  maxWords: number;
  example: string;
}

const CONFIG: Record<string, FlagSpec> = {
  "--config": { value: "F", help: "the config file (else $SERVERFS_CONFIG, ./serverfs.toml, ~/.config/serverfs/serverfs.toml)" },
};
const JSON_OUT: Record<string, FlagSpec> = { "--json": { help: "print JSON for programs instead of text" } };
/** Accepted by every command. */
export const HELP_FLAGS: Record<string, FlagSpec> = {
  "--help": { help: "print this help and exit" },
  "-h": { help: "the same as --help" },
};

/** A task id of the real form (`agt_` + 24 lowercase hex, src/shared/ids.ts), for the help. */
const EXAMPLE_TASK_ID = "agt_3f9c0a7d51e2b8461c0d9a2e";

export const COMMANDS: Readonly<Record<string, CommandSpec>> = {
  mcp: {
    summary: "the MCP server (stdio by default; stdout carries protocol only)",
    usage: ["mcp [--config F] [--http HOST:PORT]"],
    flags: { ...CONFIG, "--http": { value: "HOST:PORT", help: "serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio" } },
    maxWords: 0,
    example: "serverfs mcp --config ~/.config/serverfs/serverfs.toml",
  },
  bridge: {
    summary: "the Agent Bridge daemon (Unix socket, SQLite state, provider workers)",
    usage: ["bridge [--config F]"],
    flags: CONFIG,
    maxWords: 0,
    example: "serverfs bridge --config ~/.config/serverfs/serverfs.toml",
  },
  demo: {
    summary: "a scripted, self-contained tour in a temporary directory",
    usage: ["demo"],
    flags: {},
    maxWords: 0,
    example: "serverfs demo",
  },
  doctor: {
    summary: "check the configuration, directories, modes, guards, the Bridge and each runtime",
    usage: ["doctor [--config F]"],
    flags: CONFIG,
    maxWords: 0,
    example: "serverfs doctor --config ./serverfs.toml",
  },
  tasks: {
    summary: "the Bridge's tasks: list (newest first), show one, its events, tail (follow until it ends); approve, deny, answer or cancel",
    usage: [
      "tasks list [--status S] [--limit N] [--before ID] [--json]",
      "tasks show ID [--json]",
      "tasks events ID [--after N] [--limit N] [--json]",
      "tasks tail ID [--after N] [--json]",
      "tasks approve ID [--session] [--json]",
      "tasks deny ID [--json]",
      "tasks answer ID QUESTION_ID=OPTION_ID… [--json]",
      "tasks cancel ID [--json]",
    ],
    notes: [`ID is a task id as \`tasks list\` shows it: agt_ followed by 24 lowercase hex digits, e.g. ${EXAMPLE_TASK_ID}`],
    flags: {
      ...CONFIG,
      ...JSON_OUT,
      "--status": { value: "S", help: "only tasks in this status (list)" },
      "--limit": { value: "N", help: `at most N rows (list: 1..${LIMITS.max_task_page}; events: 1..${LIMITS.max_event_page})` },
      "--before": { value: "ID", help: "only tasks older than task ID: the next page, as list prints it (list)" },
      "--after": { value: "N", help: "start after this event id (events, tail)" },
      "--session": { help: "approve for the rest of the task's session, not just this once (approve)" },
    },
    // answer takes one QUESTION_ID=OPTION_ID word per chosen option after the task id
    maxWords: 34,
    example: `serverfs tasks tail ${EXAMPLE_TASK_ID}`,
  },
  recovery: {
    summary: "the active-slot guards, and the operator override for one",
    usage: ["recovery list [--json]", "recovery clear --slot N --confirm [--json]"],
    flags: {
      ...CONFIG,
      ...JSON_OUT,
      "--slot": { value: "N", help: "the workdir slot whose guard to clear (clear)" },
      "--confirm": { help: "required by clear: you have checked that no provider of that slot runs" },
    },
    maxWords: 1,
    example: "serverfs recovery clear --slot 3 --confirm",
  },
  console: {
    summary: "serve the operator's web console on loopback: tasks, approvals, questions, workdirs, health",
    usage: ["console [--listen HOST:PORT] [--config F]"],
    flags: { ...CONFIG, "--listen": { value: "HOST:PORT", help: "where to serve it, a loopback address (default 127.0.0.1:8377; port 0: any free port)" } },
    maxWords: 0,
    example: "serverfs console --listen 127.0.0.1:0",
  },
  init: {
    summary: "write a starter config for these directories, check it, and print each MCP host's setup",
    usage: ["init [DIR…] [--write] [--force] [--config F]"],
    flags: {
      "--config": { value: "F", help: "where to write it (default ~/.config/serverfs/serverfs.toml)" },
      "--write": { help: "make the workdirs writable (default read-only)" },
      "--force": { help: "replace an existing config file" },
    },
    maxWords: 16,
    example: "serverfs init ~/src/myproject --write",
  },
  connect: {
    summary: "print (or with --write apply) one MCP host's setup: claude-code, codex, claude-desktop",
    usage: ["connect claude-code|codex|claude-desktop [--write] [--auto-approve] [--config F]"],
    flags: {
      ...CONFIG,
      "--write": { help: "apply it through the host's own CLI or config file, keeping what is there" },
      "--auto-approve": { help: "codex: let Codex run ServerFS tools without asking (needed by codex exec for edits)" },
    },
    maxWords: 1,
    example: "serverfs connect claude-code --write",
  },
  backup: {
    summary: "copy the Bridge's state database to a new file (online, consistent, mode 0600)",
    usage: ["backup FILE [--config F] [--json]"],
    flags: { ...CONFIG, ...JSON_OUT },
    maxWords: 1,
    example: "serverfs backup ~/serverfs-state-$(date +%F).sqlite3",
  },
  version: {
    summary: "print the version (--json: the build details)",
    usage: ["version [--json]"],
    flags: JSON_OUT,
    maxWords: 0,
    example: "serverfs version --json",
  },
  help: {
    summary: "print the usage of the program or of one command",
    usage: ["help [COMMAND]"],
    flags: {},
    maxWords: 1,
    example: "serverfs help tasks",
  },
};

export const commandNames = (): string[] => Object.keys(COMMANDS);

/** The program's usage: one line per command. */
export function programUsage(): string {
  const width = Math.max(...commandNames().map((n) => n.length));
  const lines = commandNames().map((n) => `  ${n.padEnd(width)}  ${COMMANDS[n]!.summary}`);
  return [
    "usage: serverfs <command> [options]",
    "",
    "commands:",
    ...lines,
    "",
    "options: --help, -h (also after a command), --version, -V",
    "run `serverfs help COMMAND` for a command's options and an example",
  ].join("\n");
}

/** One command's usage: its synopsis, every flag, one example. */
export function commandUsage(name: string): string {
  const spec = COMMANDS[name]!;
  const flags = { ...spec.flags, ...HELP_FLAGS };
  const labels = Object.entries(flags).map(([flag, f]) => [f.value ? `${flag} ${f.value}` : flag, f.help] as const);
  const width = Math.max(...labels.map(([l]) => l.length));
  return [
    ...spec.usage.map((u, i) => `${i === 0 ? "usage: " : "       "}serverfs ${u}`),
    "",
    spec.summary,
    ...(spec.notes ?? []),
    "",
    "options:",
    ...labels.map(([l, h]) => `  ${l.padEnd(width)}  ${h}`),
    "",
    `example: ${spec.example}`,
  ].join("\n");
}
