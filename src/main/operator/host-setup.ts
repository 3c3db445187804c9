/**
 * How each MCP host starts `serverfs mcp` (docs/hosts.md): the exact setup for Claude Code, Codex and
 * Claude Desktop with this installation's real absolute paths, what each host needs beyond that, and,
 * for `connect --write`, applying it through the host's own CLI or config file without disturbing
 * what is already there. `init` prints the same text, so the docs, `init` and `connect` cannot drift.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { ServerFsError } from "../../shared/errors.ts";
import { writePrivateFile } from "../../shared/fs/private-file.ts";
import { readRegularFile } from "../../shared/fs/regular-file.ts";
import { selfCommand } from "../../shared/self-command.ts";
import { tomlString } from "./toml-string.ts";

export const HOSTS = ["claude-code", "codex", "claude-desktop"] as const;
export type Host = (typeof HOSTS)[number];

/** The name every host knows the server by (Claude Code's tools become `mcp__serverfs__<tool>`). */
export const SERVER_NAME = "serverfs";

/** The command line that starts the MCP server with `configPath`, as absolute paths. */
export function mcpLaunch(configPath: string): { command: string; args: string[] } {
  const [command, ...args] = selfCommand("mcp", "--config", configPath);
  return { command: command!, args };
}

const shellWord = (w: string) => (/^[A-Za-z0-9_./:=@%+-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`);

/** `claude mcp add` for the user scope: every project of this user sees the server. */
export function claudeCodeArgs(configPath: string): string[] {
  const { command, args } = mcpLaunch(configPath);
  return ["mcp", "add", "--scope", "user", SERVER_NAME, "--", command, ...args];
}

/** The `[mcp_servers.serverfs]` table for Codex's config.toml; `autoApprove` sets the approval mode. */
export function codexTable(configPath: string, autoApprove: boolean): string {
  const { command, args } = mcpLaunch(configPath);
  return [
    `[mcp_servers.${SERVER_NAME}]`,
    `command = ${tomlString(command)}`,
    `args = [${args.map(tomlString).join(", ")}]`,
    "# `codex exec` cannot ask you to approve a tool that may change things (edits, deletes,",
    "# submit_agent_task), so without this line those calls fail there. With it, Codex runs every",
    "# ServerFS tool without asking: ServerFS still confines, revisions and audits each call.",
    `${autoApprove ? "" : "# "}default_tools_approval_mode = "approve"`,
    "",
  ].join("\n");
}

export function claudeDesktopJson(configPath: string): string {
  const { command, args } = mcpLaunch(configPath);
  return JSON.stringify({ mcpServers: { [SERVER_NAME]: { command, args } } }, null, 2);
}

export const codexHome = (): string => process.env["CODEX_HOME"] || join(homedir(), ".codex");

/** The setup of one host for a person: what to run or paste, and what that host needs besides. */
export function hostSetup(host: Host, configPath: string): string {
  switch (host) {
    case "claude-code":
      return [
        "Claude Code — run once (or `serverfs connect claude-code --write`):",
        `  claude ${claudeCodeArgs(configPath).map(shellWord).join(" ")}`,
        "In `claude -p` (non-interactive) mode every MCP tool call is denied until you allow the server:",
        `  claude -p --allowedTools mcp__${SERVER_NAME} "…"   (or add "mcp__${SERVER_NAME}" to permissions.allow in settings)`,
        "That allows every ServerFS tool without asking; ServerFS still confines and audits each call.",
      ].join("\n");
    case "codex":
      return [
        `Codex — add to ${join(codexHome(), "config.toml")} (or \`serverfs connect codex --write\`):`,
        ...codexTable(configPath, false)
          .trimEnd()
          .split("\n")
          .map((l) => `  ${l}`),
      ].join("\n");
    case "claude-desktop":
      return [
        "Claude Desktop — merge into claude_desktop_config.json (Settings → Developer → Edit Config):",
        ...claudeDesktopJson(configPath)
          .split("\n")
          .map((l) => `  ${l}`),
      ].join("\n");
  }
}

/** What `init` and `connect` say when no `[audit] file` is set: the host alone then keeps the audit lines. */
export const auditFileHint = (configPath: string): string =>
  `Audit: each host keeps the server's audit lines (its stderr) its own way; for one file that outlives them, set [audit] file in ${configPath} (docs/hosts.md#where-the-audit-lines-go).`;

export type ApplyOutcome = { done: string } | { unchanged: string };

/**
 * Applies one host's setup: Claude Code through `claude mcp add` (its own CLI keeps its own files),
 * Codex by appending the table to its config.toml when it has none (everything else is kept byte for
 * byte). An existing `serverfs` entry is left alone: the person decides whether to replace it.
 */
export async function applyHostSetup(host: Host, configPath: string, opts: { autoApprove: boolean }): Promise<ApplyOutcome> {
  if (host === "claude-desktop") {
    throw new ServerFsError("INVALID_ARGUMENT", "Claude Desktop has no Linux build to configure here; paste the printed JSON into its config");
  }
  if (host === "codex") {
    const file = join(codexHome(), "config.toml");
    // a FIFO there would block a plain read forever; a directory, socket or device is no config
    const notRegular = (kind: string) => new ServerFsError("NOT_A_FILE", `${file} is ${kind}, not a regular file; make it one, or point CODEX_HOME elsewhere`);
    const before = existsSync(file) ? readRegularFile(file, notRegular).text : "";
    let parsed: Record<string, unknown>;
    try {
      parsed = Bun.TOML.parse(before) as Record<string, unknown>;
    } catch {
      throw new ServerFsError("INVALID_ARGUMENT", `${file} is not valid TOML; fix it first, then run this again`);
    }
    const servers = parsed["mcp_servers"] as Record<string, unknown> | undefined;
    const existing = servers?.[SERVER_NAME] as Record<string, unknown> | undefined;
    if (existing !== undefined) {
      // the person's table is theirs to edit; a switch asked for but not in force must not pass for done
      if (opts.autoApprove && existing["default_tools_approval_mode"] !== "approve") {
        throw new ServerFsError(
          "PATH_ALREADY_EXISTS",
          `${file} already has [mcp_servers.${SERVER_NAME}] without default_tools_approval_mode = "approve"; add that line to the table yourself (or remove the table and run this again)`,
        );
      }
      return { unchanged: `${file} already has [mcp_servers.${SERVER_NAME}]; edit or remove it yourself to change it` };
    }
    const joiner = before === "" || before.endsWith("\n\n") ? "" : before.endsWith("\n") ? "\n" : "\n\n";
    writePrivateFile(file, `${before}${joiner}${codexTable(configPath, opts.autoApprove)}`);
    return { done: `added [mcp_servers.${SERVER_NAME}] to ${file}` };
  }
  const claude = Bun.which("claude");
  if (claude === null)
    throw new ServerFsError("AGENT_RUNTIME_UNAVAILABLE", "the claude command is not on PATH; install Claude Code or run the printed command where it is");
  const existing = Bun.spawnSync([claude, "mcp", "get", SERVER_NAME], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  if (existing.exitCode === 0)
    return { unchanged: `Claude Code already has a server named ${SERVER_NAME}; \`claude mcp remove ${SERVER_NAME} --scope user\` first to replace it` };
  const added = Bun.spawnSync([claude, ...claudeCodeArgs(configPath)], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  if (added.exitCode !== 0) {
    throw new ServerFsError("MUTATION_IO_ERROR", `claude mcp add failed (exit ${added.exitCode}): ${added.stderr.toString().trim().split("\n")[0] ?? ""}`);
  }
  return { done: `added ${SERVER_NAME} to Claude Code (user scope)` };
}
