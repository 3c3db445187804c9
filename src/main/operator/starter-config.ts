/**
 * The commented configuration `serverfs init` writes (docs/hosts.md "From zero"): one `[[workdirs]]`
 * table per directory, each read-only unless asked, with aliases derived from the directory names
 * (lowercased, every character outside `[a-z0-9_-]` becomes `-`, a clash gets `-2`, `-3`, …), and the
 * Bridge present but off, with what turning it on takes.
 */
import { basename } from "node:path";
import { SLOTS } from "../../shared/leases/lock-files.ts";
import { tomlString } from "./toml-string.ts";

/** The alias grammar of a workdir (docs/configuration.md): a letter first, at most 32 characters. */
const ALIAS_MAX = 32;

/** `My Project.v2` → `my-project-v2`; a name that starts with no letter gets `w-` before it. */
export function aliasFor(dir: string, taken: ReadonlySet<string>): string {
  let base = basename(dir)
    .toLowerCase()
    .replace(/[^a-z0-9_-]/g, "-");
  if (!/^[a-z]/.test(base)) base = `w-${base}`;
  base = base.slice(0, ALIAS_MAX);
  if (base === "w-") base = "workdir";
  for (let n = 1; ; n++) {
    const suffix = n === 1 ? "" : `-${n}`;
    const alias = base.slice(0, ALIAS_MAX - suffix.length) + suffix;
    if (!taken.has(alias)) return alias;
  }
}

export interface StarterWorkdir {
  alias: string;
  path: string;
  writable: boolean;
}

export function starterWorkdirs(dirs: readonly string[], writable: boolean): StarterWorkdir[] {
  if (dirs.length > SLOTS.length) throw new RangeError(`at most ${SLOTS.length} workdirs`);
  const taken = new Set<string>();
  return dirs.map((path) => {
    const alias = aliasFor(path, taken);
    taken.add(alias);
    return { alias, path, writable };
  });
}

export function starterConfig(workdirs: readonly StarterWorkdir[], now = new Date()): string {
  const tables = workdirs.flatMap((w, i) => [
    "[[workdirs]]",
    `slot = ${i + 1}`,
    `alias = ${tomlString(w.alias)}`,
    `path = ${tomlString(w.path)}`,
    `read_only = ${!w.writable}${w.writable ? "" : "          # `serverfs init --write` (or false here) lets the client edit"}`,
    '# description = "what this directory is, shown to the client"',
    "",
  ]);
  return [
    `# ServerFS configuration, written by \`serverfs init\` on ${now.toISOString().slice(0, 10)}.`,
    "# Every key and its default: docs/configuration.md. Check it with `serverfs doctor`.",
    "",
    "[server]",
    'log_level = "info"                 # debug | info | warn | error (JSON lines on stderr)',
    "",
    "# The audit lines go to stderr, which each MCP host keeps its own way (or not). For one audit that",
    "# outlives the hosts, append them to a file too (0600, its directory created 0700; rotated at",
    "# max_bytes, keeping `keep` old files): docs/hosts.md#where-the-audit-lines-go",
    "[audit]",
    '# file = "~/.local/state/serverfs/audit.jsonl"',
    "",
    "# Each [[workdirs]] table is one directory the MCP client may reach, by its alias.",
    ...tables,
    "# Agent tasks (Codex, Claude Code) go through the Bridge: set enabled = true, run `serverfs bridge`",
    '# (docs/deployment.md), and give a workdir agent_mode = "review" or "workspace-write" and',
    '# agent_runtimes = ["codex"] with [runtimes.codex] enabled = true.',
    "[bridge]",
    "enabled = false",
    "",
  ].join("\n");
}
