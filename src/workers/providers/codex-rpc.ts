/**
 * The JSON-RPC peer of `codex app-server` over a provider's stdio (docs/runtimes.md#codex): newline-
 * delimited messages **without** a `"jsonrpc"` field, our request ids from 0, server→client request
 * ids echoed exactly as received (0 is an id, numbers stay numbers).
 *
 * Offers:
 * - `CodexRpc(proc, timeoutMs)`: `request(method, params)` (bounded by `timeoutMs`; rejects with
 *   `RpcFailure`), `notify(method, params?)`, `reply(id, result)`, `replyError(id, code, message)`,
 *   `dispatch(message)` (hands a response to its waiter), `close()` (fails every waiter).
 * - `parseIncoming(line)` → `Incoming` (response, request or notification) or null for a line that is
 *   not a JSON-RPC message.
 * - `RpcFailure` (`kind`: "error" reply, "timeout", "closed"), `METHOD_NOT_FOUND`, type `RequestId`.
 */
import * as v from "valibot";
import type { JsonLine } from "./line-reader.ts";
import type { ProviderProcess } from "./spawn.ts";

export const METHOD_NOT_FOUND = -32601;

const RequestIdSchema = v.union([v.number(), v.string()]);
export type RequestId = v.InferOutput<typeof RequestIdSchema>;

const ParamsSchema = v.optional(v.record(v.string(), v.unknown()), {});

const ResponseSchema = v.looseObject({
  id: RequestIdSchema,
  result: v.optional(v.unknown()),
  error: v.optional(v.looseObject({ code: v.optional(v.number()), message: v.optional(v.string()) })),
});
const RequestSchema = v.looseObject({ id: RequestIdSchema, method: v.string(), params: ParamsSchema });
const NotificationSchema = v.looseObject({ method: v.string(), params: ParamsSchema });

export type Incoming =
  | { kind: "response"; id: RequestId; result: unknown; error: { message: string } | null }
  | { kind: "request"; id: RequestId; method: string; params: Record<string, unknown> }
  | { kind: "notification"; method: string; params: Record<string, unknown> };

export function parseIncoming(json: JsonLine): Incoming | null {
  const req = v.safeParse(RequestSchema, json);
  if (req.success) return { kind: "request", id: req.output.id, method: req.output.method, params: req.output.params };
  const note = v.safeParse(NotificationSchema, json);
  if (note.success) return { kind: "notification", method: note.output.method, params: note.output.params };
  const res = v.safeParse(ResponseSchema, json);
  if (res.success) {
    const error = res.output.error ? { message: res.output.error.message ?? "" } : null;
    return { kind: "response", id: res.output.id, result: res.output.result, error };
  }
  return null;
}

export class RpcFailure extends Error {
  constructor(
    readonly kind: "error" | "timeout" | "closed",
    /** The provider's own message for an error reply (raw: redacted downstream). */
    readonly providerMessage = "",
  ) {
    super(kind);
  }
}

interface Waiter {
  resolve(result: unknown): void;
  reject(e: RpcFailure): void;
  timer: ReturnType<typeof setTimeout>;
}

export class CodexRpc {
  private nextId = 0;
  private closed = false;
  private readonly waiters = new Map<number, Waiter>();

  constructor(
    private readonly proc: ProviderProcess,
    private readonly timeoutMs: number,
  ) {}

  private send(message: Record<string, unknown>): void {
    this.proc.send(JSON.stringify(message));
  }

  request(method: string, params: Record<string, unknown>): Promise<unknown> {
    if (this.closed) return Promise.reject(new RpcFailure("closed"));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(id);
        reject(new RpcFailure("timeout"));
      }, this.timeoutMs);
      this.waiters.set(id, { resolve, reject, timer });
      this.send({ id, method, params });
    });
  }

  notify(method: string, params?: Record<string, unknown>): void {
    this.send(params === undefined ? { method } : { method, params });
  }

  reply(id: RequestId, result: Record<string, unknown>): void {
    this.send({ id, result });
  }

  replyError(id: RequestId, code: number, message: string): void {
    this.send({ id, error: { code, message } });
  }

  dispatch(response: Extract<Incoming, { kind: "response" }>): void {
    if (typeof response.id !== "number") return;
    const waiter = this.waiters.get(response.id);
    if (!waiter) return;
    this.waiters.delete(response.id);
    clearTimeout(waiter.timer);
    if (response.error) waiter.reject(new RpcFailure("error", response.error.message));
    else waiter.resolve(response.result);
  }

  close(): void {
    this.closed = true;
    for (const w of this.waiters.values()) {
      clearTimeout(w.timer);
      w.reject(new RpcFailure("closed"));
    }
    this.waiters.clear();
  }
}
