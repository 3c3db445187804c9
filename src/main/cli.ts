#!/usr/bin/env bun
/**
 * `serverfs` command dispatch (config.md). Exit codes: 0 success, 2 configuration or usage error
 * (`serverfs: configuration error: ...` on stderr), 1 any other failure. stdout is reserved for
 * protocol (mcp) or for the command's own output.
 */
import { ConfigError } from "../shared/config/load.ts";
import { isServerFsError } from "../shared/errors.ts";

export class UsageError extends Error {}

export interface ParsedArgs {
  command: string[];
  flags: Map<string, string | true>;
}

const VALUE_FLAGS = new Set(["--config", "--http", "--slot", "--status", "--limit", "--after"]);

export function parseArgs(argv: string[]): ParsedArgs {
  const command: string[] = [];
  const flags = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      if (eq > 0) flags.set(a.slice(0, eq), a.slice(eq + 1));
      else if (VALUE_FLAGS.has(a)) {
        const value = argv[++i];
        if (value === undefined) throw new UsageError(`${a} needs a value`);
        flags.set(a, value);
      } else flags.set(a, true);
    } else command.push(a);
  }
  return { command, flags };
}

const USAGE = `usage: serverfs <command> [options]
  mcp [--config F] [--http HOST:PORT]   the MCP server (stdio by default)
  bridge [--config F]                   the Agent Bridge daemon
  demo                                  a scripted, self-contained tour
  doctor [--config F]                   check the installation
  tasks list [--status S] [--limit N]   the Bridge's tasks, newest first (tasks: --json, --config F)
  tasks show ID | events ID [--after N] one task / its events
  tasks tail ID                         follow a task's events live until it ends
  recovery list                         the active-slot guards and their verdicts (--json)
  recovery clear --slot N --confirm     the operator override for one guard`;

function flagString(args: ParsedArgs, name: string): string | undefined {
  const v = args.flags.get(name);
  if (v === true) throw new UsageError(`${name} needs a value`);
  return v;
}

async function main(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  const [cmd] = args.command;
  const configPath = flagString(args, "--config");
  switch (cmd) {
    case "mcp": {
      const { prepareMcp } = await import("./mcp/startup.ts");
      const rt = prepareMcp(configPath);
      const http = flagString(args, "--http");
      if (http !== undefined) {
        const { serveHttp } = await import("./mcp/http.ts");
        await serveHttp(rt, http);
      } else {
        const { serveStdio } = await import("./mcp/stdio.ts");
        await serveStdio(rt);
      }
      return -1;
    }
    case "bridge": {
      const { runBridge } = await import("./bridge/startup.ts");
      return runBridge(configPath);
    }
    case "__fake-provider": {
      const { runFakeProvider } = await import("../workers/fake-provider.ts");
      await runFakeProvider();
      return 0;
    }
    case "tasks": {
      const { runTasks } = await import("./operator/tasks.ts");
      return runTasks(args, configPath);
    }
    case "doctor": {
      const { runDoctor } = await import("./operator/doctor.ts");
      return runDoctor(configPath);
    }
    case "recovery": {
      const { runRecovery } = await import("./operator/recovery.ts");
      return runRecovery(args, configPath);
    }
    case "demo": {
      const { runDemo } = await import("./demo/run.ts");
      return runDemo();
    }
    case undefined:
    case "help":
    case "--help":
      process.stdout.write(`${USAGE}\n`);
      return cmd === undefined ? 2 : 0;
    default:
      throw new UsageError(`unknown command ${cmd}`);
  }
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
        process.stderr.write(`serverfs: usage error: ${e.message}\n${USAGE}\n`);
        process.exit(2);
      }
      // a coded failure (e.g. BRIDGE_ALREADY_RUNNING at Bridge startup) keeps its code
      process.stderr.write(`serverfs: ${isServerFsError(e) ? e.toText() : e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    },
  );
}
