/**
 * How this program starts another copy of itself: the compiled single file runs as
 * `<binary> <command>`, a checkout as `<bun> <cli.ts> <command>`. The Bridge uses it for the fake
 * provider, the demo for the Bridge and the MCP server; the MCP server, the Bridge and the provider
 * worker find their worker threads' entry points with it, which is why it sits in src/shared (a
 * worker must not reach up into src/main).
 */
import { join } from "node:path";

/** Bun's compiled executables serve their embedded sources from this virtual root. */
export const isCompiled = (): boolean => import.meta.dir.startsWith("/$bunfs/") || import.meta.dir.startsWith("B:\\~BUN");

export function selfCommand(...args: string[]): string[] {
  return isCompiled() ? [process.execPath, ...args] : [process.execPath, join(import.meta.dir, "..", "main", "cli.ts"), ...args];
}

/**
 * Where a worker entry point lives: next to the sources in a checkout, inside the executable's
 * embedded file system when compiled (`bun build --compile --root .` keeps the source layout).
 */
export function workerUrl(name: string): URL {
  return isCompiled() ? new URL(`file:///$bunfs/root/src/workers/${name}.js`) : new URL(`../workers/${name}.ts`, import.meta.url);
}
