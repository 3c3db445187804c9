/**
 * What a thread of the Bridge gives back once the Bridge is idle (docs/performance.md "## Bridge",
 * "Memory that returns"): a full, synchronous garbage collection of the thread's heap, which lets
 * the allocator return the freed pages, and SQLite's page cache of the thread's connection
 * (`PRAGMA shrink_memory`). Never on a request's path: the collection stalls its thread for a few
 * milliseconds.
 */
import type { Store } from "./store/index.ts";

export function releaseMemory(store: Store | null): void {
  store?.releaseMemory();
  Bun.gc(true);
}
