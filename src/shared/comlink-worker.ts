/**
 * comlink over Bun Workers. `Comlink.wrap(worker)` and `Comlink.expose(api)` work on Bun's Worker
 * as they are; this adds the two things the Bridge needs that comlink alone does not give:
 * - a thrown `ServerFsError` keeps its code across the boundary (comlink sends only an Error's
 *   message, name and stack);
 * - a call still pending when the worker stops (an uncaught error ends a Bun worker) rejects with
 *   the caller's error instead of hanging forever.
 * Offers:
 * - `exposeApi(api)`: inside a worker, serve a flat object of functions to the thread that started it;
 * - `startWorker<Api>(url, lost)`: in the parent, start the worker and get `{ remote, exited, terminate }`.
 */
import * as Comlink from "comlink";
import { type ErrorCode, isServerFsError, ServerFsError } from "./errors.ts";

/** What a ServerFsError becomes on the wire: structured-cloneable, recognisable by its marker. */
interface WireServerFsError {
  serverFsError: true;
  code: ErrorCode;
  message: string;
}

const isWireServerFsError = (v: unknown): v is WireServerFsError =>
  typeof v === "object" && v !== null && (v as { serverFsError?: unknown }).serverFsError === true;

let errorTransferInstalled = false;

/** Wraps comlink's own "throw" handler (per thread, idempotent); other thrown values keep its behaviour. */
function installErrorTransfer(): void {
  const base = Comlink.transferHandlers.get("throw");
  if (errorTransferInstalled || base === undefined) return;
  errorTransferInstalled = true;
  Comlink.transferHandlers.set("throw", {
    canHandle: (v): v is unknown => base.canHandle(v),
    serialize(thrown) {
      const value = (thrown as { value?: unknown }).value;
      if (!isServerFsError(value)) return base.serialize(thrown);
      const wire: WireServerFsError = { serverFsError: true, code: value.code, message: value.message };
      return [wire, []];
    },
    deserialize(wire) {
      if (isWireServerFsError(wire)) throw new ServerFsError(wire.code, wire.message);
      return base.deserialize(wire);
    },
  });
}

/** Serves `api` to the parent thread; call once at the top of a worker entry point. */
export function exposeApi(api: object): void {
  installErrorTransfer();
  Comlink.expose(api);
}

export interface StartedWorker<Api> {
  /** The worker's API; every call is async and rejects with `lost()` once the worker has stopped. */
  remote: Comlink.Remote<Api>;
  /** Settles (never rejects) when the worker stops, whether it crashed or was terminated. */
  exited: Promise<void>;
  terminate(): void;
  /** Lets the process end while the worker still runs (pool workers, which nothing waits for at exit). */
  unref(): void;
}

/**
 * Starts the worker at `url` (pass `new URL("…", import.meta.url)` so builds can find it). `lost`
 * makes the error a call gets when the worker is gone, e.g. a storage error for the spool worker.
 */
export function startWorker<Api extends object>(url: URL, lost: () => ServerFsError): StartedWorker<Api> {
  installErrorTransfer();
  const worker = new Worker(url.href);
  let alive = true;
  /**
   * The pending calls' rejections, each dropped once its call settles. Not `Promise.race` with a
   * promise of the worker's end: every race leaves a reaction on that promise for the worker's whole
   * life, and with it the call's answer (an 8 MiB result read back in chunks stayed resident whole).
   */
  const pending = new Set<(e: ServerFsError) => void>();
  const exited = new Promise<void>((resolve) => {
    worker.addEventListener("close", () => {
      alive = false;
      for (const reject of pending) reject(lost());
      pending.clear();
      resolve();
    });
  });
  const call = (answer: Promise<unknown>): Promise<unknown> =>
    new Promise((resolve, reject) => {
      pending.add(reject);
      answer.then(resolve, reject).finally(() => pending.delete(reject));
    });
  const inner = Comlink.wrap<Api>(worker) as unknown as Record<string | symbol, unknown>;
  // Flat APIs only: each property is a method. `then` stays undefined so the remote is not a thenable.
  const remote = new Proxy(inner, {
    get(target, prop) {
      if (typeof prop !== "string") return Reflect.get(target, prop);
      if (prop === "then") return undefined;
      const method = target[prop] as (...args: unknown[]) => Promise<unknown>;
      return (...args: unknown[]) => (alive ? call(method(...args)) : Promise.reject(lost()));
    },
  }) as unknown as Comlink.Remote<Api>;
  return {
    remote,
    exited,
    terminate() {
      worker.terminate();
    },
    unref() {
      worker.unref();
    },
  };
}
