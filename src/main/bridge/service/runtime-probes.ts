/**
 * Runtime probes for `runtime.list` and submission (docs/bridge-rpc.md#runtimelist, docs/task-model.md#submission step 7): run concurrently,
 * cached up to 30 s (on the monotonic clock, so a step of the system clock back never keeps a stale
 * answer) so a burst of submissions does not spawn a `--version` per call. A probe that
 * throws yields `{name, available: false}` only.
 */
import type { RuntimeAdapter, RuntimeInfo } from "../../../workers/providers/types.ts";

const CACHE_MS = 30_000;

export type ProbeResult = RuntimeInfo | { name: string; available: false };

export class RuntimeProbes {
  private readonly cache = new Map<string, { at: number; result: Promise<ProbeResult> }>();

  constructor(private readonly adapters: Map<string, RuntimeAdapter>) {}

  has(name: string): boolean {
    return this.adapters.has(name);
  }

  probe(name: string): Promise<ProbeResult> {
    const adapter = this.adapters.get(name);
    if (!adapter) return Promise.resolve({ name, available: false });
    const hit = this.cache.get(name);
    if (hit && performance.now() - hit.at < CACHE_MS) return hit.result;
    const result = adapter.probe().catch((): ProbeResult => ({ name, available: false }));
    this.cache.set(name, { at: performance.now(), result });
    return result;
  }

  async list(): Promise<ProbeResult[]> {
    const names = [...this.adapters.keys()].sort();
    return Promise.all(names.map((n) => this.probe(n)));
  }
}
