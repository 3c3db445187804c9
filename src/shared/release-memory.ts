/**
 * What a thread of the Bridge gives back once the Bridge is idle (docs/performance.md "## Bridge",
 * "Memory that returns"): a full, synchronous garbage collection of the thread's heap, SQLite's page
 * cache of the thread's connection (`PRAGMA shrink_memory`), and then `Bun.shrink()`, which has the
 * engine hand the heap's now-empty pages back (after a flood of events the collection alone left
 * about 5 MB more resident; the API is marked deprecated in Bun's types but is what does this, and a
 * Bun without it fails the typecheck at the upgrade, not silently). Never on a request's path: the
 * collection stalls its thread for a few milliseconds.
 */
import type { Store } from "./store/index.ts";

export function releaseMemory(store: Store | null): void {
  store?.releaseMemory();
  Bun.gc(true);
  Bun.shrink();
}
