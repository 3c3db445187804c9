/**
 * The last resort of `serverfs mcp` and `serverfs bridge` (docs/deployment.md "Logs"): an error
 * nothing caught — an uncaught exception, an unhandled rejection — is logged as `fatal_error` (its
 * kind, name, errno code and stack frames, never its message: error-trace.ts), and the process then
 * shuts down as it does on SIGTERM, releasing what it holds, and exits 1. A shutdown that has not
 * finished within its bound is cut short, with exit 1 all the same: a process in an unknown state
 * must not linger. Another such error while shutting down changes nothing; the first few are logged
 * (a failing log itself must not keep the shutdown busy logging), the rest only counted.
 *
 * Offers `installFatalHandlers` and, for its test, `fatalHandler`.
 */
import type { AuditLog } from "../shared/audit.ts";
import { errorTrace } from "../shared/error-trace.ts";

export type FatalKind = "uncaught_exception" | "unhandled_rejection";

/** How many `fatal_error` lines one process writes at most. */
const MAX_LOGGED = 3;

/** The bound of `serverfs mcp`, whose shutdown only aborts its calls and closes its sessions. */
export const FATAL_BOUND_MS = 2_000;

export interface FatalOptions {
  audit: AuditLog;
  /** What a normal shutdown does (SIGTERM); it may be asynchronous. */
  shutdown: () => Promise<void> | void;
  /** The most the shutdown may take before the process exits anyway. */
  boundMs: number;
  exit?: (code: number) => void;
}

export function fatalHandler({ audit, shutdown, boundMs, exit = (code) => process.exit(code) }: FatalOptions): (kind: FatalKind, e: unknown) => void {
  let ending = false;
  let seen = 0;
  return (kind, e) => {
    if (++seen <= MAX_LOGGED) {
      try {
        audit.error("fatal_error", { kind, shutting_down: ending, ...errorTrace(e) });
      } catch {
        // the log itself is what fails: the shutdown goes on without it
      }
    }
    if (ending) return;
    ending = true;
    const bound = setTimeout(() => exit(1), boundMs);
    void (async () => {
      try {
        await shutdown();
      } catch {
        // the process is going away; what could not be released the next start recovers
      }
      clearTimeout(bound);
      exit(1);
    })();
  };
}

export function installFatalHandlers(options: FatalOptions): void {
  const handle = fatalHandler(options);
  process.on("uncaughtException", (e) => handle("uncaught_exception", e));
  process.on("unhandledRejection", (e) => handle("unhandled_rejection", e));
}
