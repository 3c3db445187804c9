/**
 * `serverfs console [--listen HOST:PORT] [--config F]` (docs/console.md): serves the operator's web
 * console on a loopback address, talks to the Bridge over its socket like `serverfs tasks`, prints the
 * URL to open on stdout, and runs until SIGINT, SIGTERM or SIGHUP. Offers `runConsole`.
 */
import { BridgeClient } from "../../shared/bridge-protocol/client.ts";
import { loadConfig } from "../../shared/config/load.ts";
import { type ParsedArgs, stringFlag, UsageError } from "../args.ts";
import { isLoopback, parseListen } from "../http-gate.ts";
import { printLine } from "../operator/output.ts";
import { ConsoleApi } from "./api.ts";
import { consoleMetrics } from "./metrics.ts";
import { loadSecrets } from "./secrets.ts";
import { startConsoleServer } from "./server.ts";

export const DEFAULT_LISTEN = "127.0.0.1:8377";

export async function runConsole(args: ParsedArgs, configPath: string | undefined): Promise<number> {
  const address = parseListen(stringFlag(args, "--listen") ?? DEFAULT_LISTEN, "--listen", "console");
  // plain HTTP: a token and a cookie must not cross a network; reach a remote console through a tunnel
  if (!isLoopback(address.host))
    throw new UsageError("--listen must be a loopback address (127.0.0.1, ::1, localhost); use an SSH tunnel to reach it from elsewhere", "console");
  const config = loadConfig({ role: "operator", configPath });
  const secrets = loadSecrets(config);
  const client = BridgeClient.fromConfig(config);
  const server = await startConsoleServer(address, { api: new ConsoleApi(client, config), secrets, metrics: () => consoleMetrics(client) });
  printLine(
    secrets.fromFile
      ? `serverfs console: open ${server.origin}/?token=<the token in [console] token_file>`
      : `serverfs console: open ${server.origin}/?token=${secrets.token}`,
  );
  return new Promise<number>((resolve) => {
    const stop = () => {
      server.close();
      resolve(0);
    };
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.once(signal, stop);
  });
}
