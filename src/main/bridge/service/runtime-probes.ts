/**
 * Runtime probes for `runtime.list` and submission (docs/bridge-rpc.md#runtimelist, docs/task-model.md#submission step 7): run concurrently,
 * cached up to 30 s (on the monotonic clock, so a step of the system clock back never keeps a stale
 * answer) so a burst of submissions does not spawn a `--version` per call. A probe that
 * throws yields `{name, available: false}` only.
 *
 * The models of a runtime (docs/runtimes.md#models-effort-and-budget) are fetched lazily, the first
 * time a listing or a submission needs them, and kept 10 minutes (a failed fetch 30 s). A listing waits
 * for them at most `LISTING_WAIT_MS` and otherwise shows `models: null` (unknown) while the fetch goes
 * on for the next caller; a submission that needs them waits for the fetch itself, which the adapter
 * bounds (src/main/bridge/service/model-choices.ts `needsListing`).
 */
import type { ModelInfo, RuntimeAdapter, RuntimeInfo } from "../../../workers/providers/types.ts";

const CACHE_MS = 30_000;
const MODELS_CACHE_MS = 600_000;
/** How long a listing waits for a runtime's models before it shows them unknown. */
export const LISTING_WAIT_MS = 3_000;

export type ProbeResult = RuntimeInfo | { name: string; available: false };

/** A `runtime.list` entry: the probe, and for an available runtime its models (null: unknown). */
export type ListedRuntime = ProbeResult & { models?: ModelInfo[] | null };

interface Cached<T> {
  at: number;
  ttl: number;
  result: Promise<T>;
}

export class RuntimeProbes {
  private readonly cache = new Map<string, Cached<ProbeResult>>();
  private readonly modelCache = new Map<string, Cached<ModelInfo[] | null>>();

  constructor(private readonly adapters: Map<string, RuntimeAdapter>) {}

  has(name: string): boolean {
    return this.adapters.has(name);
  }

  probe(name: string): Promise<ProbeResult> {
    const adapter = this.adapters.get(name);
    if (!adapter) return Promise.resolve({ name, available: false });
    const hit = this.cache.get(name);
    if (hit && performance.now() - hit.at < hit.ttl) return hit.result;
    const result = adapter.probe().catch((): ProbeResult => ({ name, available: false }));
    this.cache.set(name, { at: performance.now(), ttl: CACHE_MS, result });
    return result;
  }

  /** Whether a task of this runtime may run only a listed model (so every submission needs the listing). */
  onlyListedModels(name: string): boolean {
    return this.adapters.get(name)?.onlyListedModels ?? false;
  }

  /** The runtime's models, or null when it could not say (a failure is kept for 30 s only). */
  models(name: string): Promise<ModelInfo[] | null> {
    const adapter = this.adapters.get(name);
    if (!adapter) return Promise.resolve(null);
    const hit = this.modelCache.get(name);
    if (hit && performance.now() - hit.at < hit.ttl) return hit.result;
    const entry: Cached<ModelInfo[] | null> = { at: performance.now(), ttl: MODELS_CACHE_MS, result: Promise.resolve(null) };
    entry.result = adapter.listModels().catch(() => {
      entry.ttl = CACHE_MS;
      return null;
    });
    this.modelCache.set(name, entry);
    return entry.result;
  }

  async list(): Promise<ListedRuntime[]> {
    const names = [...this.adapters.keys()].sort();
    return Promise.all(
      names.map(async (n): Promise<ListedRuntime> => {
        const probe = await this.probe(n);
        if (!probe.available) return probe;
        let timer: ReturnType<typeof setTimeout> | undefined;
        const late = new Promise<null>((resolve) => {
          timer = setTimeout(() => resolve(null), LISTING_WAIT_MS);
        });
        const listing = await Promise.race([this.models(n), late]);
        clearTimeout(timer);
        return { ...probe, models: listing };
      }),
    );
  }
}
