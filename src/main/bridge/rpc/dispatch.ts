/**
 * One request line in, one response out, checked in exactly the order of docs/bridge-rpc.md#envelope:
 * UTF-8 and JSON → top-level key set and types → protocol version → method name → params key set
 * → params types → the method's handler. Once shutdown has begun every line is answered
 * BRIDGE_CLOSED. A handler's `ServerFsError` becomes its code and message, a storage fault
 * BRIDGE_STORAGE_ERROR; anything else it throws is BRIDGE_PROTOCOL_ERROR with a generic message. Offers `answerLine` and the handler types.
 */
import { checkObject } from "../../../shared/bridge-protocol/check.ts";
import { isJsonObject, PROTOCOL_VERSION, RequestEnvelopeSchema, type RpcResponse } from "../../../shared/bridge-protocol/envelope.ts";
import { isMethod, METHOD_PARAMS, type Method, type Params } from "../../../shared/bridge-protocol/methods.ts";
import type { ResultInput } from "../../../shared/bridge-protocol/results.ts";
import { isServerFsError } from "../../../shared/errors.ts";
import { isStorageFault, storageError } from "../../../shared/storage-fault.ts";
import { decodeStrict } from "../../../shared/utf8.ts";
import { failure, INTERNAL_FAILURE, success } from "./responses.ts";

export interface RequestContext {
  /** Aborted when the connection closes or the server closes (long polls return at once). */
  signal: AbortSignal;
}

/**
 * A method's handler, its params typed by that method's schema in METHOD_PARAMS (defaults applied)
 * and its answer by that method's schema in METHOD_RESULTS. The answer goes out as the handler built
 * it: the schema types it, nothing here re-parses it.
 */
export type MethodHandler<M extends Method> = (params: Params<M>, ctx: RequestContext) => Promise<ResultInput<M>> | ResultInput<M>;
/** A handler for every method: what the Bridge serves. */
export type MethodTable = { [M in Method]: MethodHandler<M> };
/** A server may leave methods out; they answer METHOD_NOT_FOUND. */
export type MethodHandlers = Partial<MethodTable>;

export interface Dispatch {
  handlers: MethodHandlers;
  /** True once shutdown has begun. */
  isClosing: () => boolean;
  /** Told about every unexpected handler failure (the peer only sees a generic message). */
  onUnexpected?: ((method: Method, error: unknown) => void) | undefined;
  /** Told about every answered request: the debug log's protocol detail (never params or results). */
  onAnswered?: ((method: string | null, response: RpcResponse, ms: number) => void) | undefined;
}

type Parsed = { ok: true; value: unknown } | { ok: false; message: string };

function parseLine(bytes: Uint8Array): Parsed {
  const text = decodeStrict(bytes);
  if (text === null) return { ok: false, message: "request is not valid UTF-8" };
  try {
    // JSON.parse has no NaN/Infinity literals and keeps the last of repeated keys (docs/bridge-rpc.md#socket-and-framing)
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, message: "request is not a JSON object" };
  }
}

/** The id to echo: the line's `request_id` when it is a non-empty string (docs/bridge-rpc.md#envelope). */
function echoId(value: unknown): string | null {
  if (!isJsonObject(value)) return null;
  const id = value["request_id"];
  return typeof id === "string" && id !== "" ? id : null;
}

export async function answerLine(bytes: Uint8Array, dispatch: Dispatch, ctx: RequestContext): Promise<RpcResponse> {
  if (!dispatch.onAnswered) return answer(bytes, dispatch, ctx);
  const began = performance.now();
  const seen: { method: string | null } = { method: null };
  const response = await answer(bytes, dispatch, ctx, seen);
  dispatch.onAnswered(seen.method, response, performance.now() - began);
  return response;
}

async function answer(bytes: Uint8Array, dispatch: Dispatch, ctx: RequestContext, seen?: { method: string | null }): Promise<RpcResponse> {
  const parsed = parseLine(bytes);
  const id = parsed.ok ? echoId(parsed.value) : null;
  if (dispatch.isClosing()) return failure(id, "BRIDGE_CLOSED", "the Bridge is shutting down");
  if (!parsed.ok) return failure(null, "INVALID_REQUEST", parsed.message);
  if (!isJsonObject(parsed.value)) return failure(null, "INVALID_REQUEST", "request is not a JSON object");

  const envelope = checkObject(RequestEnvelopeSchema, parsed.value, "", "request");
  if (!envelope.ok) return failure(id, "INVALID_REQUEST", envelope.message);
  const { protocol_version, request_id, method, params } = envelope.value;
  if (seen) seen.method = typeof method === "string" ? method.slice(0, 64) : null;
  if (protocol_version !== PROTOCOL_VERSION) {
    return failure(request_id, "PROTOCOL_VERSION_UNSUPPORTED", `this Bridge speaks protocol version ${PROTOCOL_VERSION}`);
  }
  if (!isMethod(method)) return failure(request_id, "METHOD_NOT_FOUND", "unknown method");
  return invoke(method, request_id, params, dispatch, ctx);
}

/**
 * The params check and the handler call of one method. Generic in the method, so the schema that
 * checks the params and the handler that receives them are typed by the same `M`.
 */
async function invoke<M extends Method>(
  method: M,
  request_id: string,
  params: Record<string, unknown>,
  dispatch: Dispatch,
  ctx: RequestContext,
): Promise<RpcResponse> {
  const handler = dispatch.handlers[method];
  if (handler === undefined) return failure(request_id, "METHOD_NOT_FOUND", "unknown method");

  const checked = checkObject(METHOD_PARAMS[method], params, "params.", "params");
  if (!checked.ok) return failure(request_id, "INVALID_REQUEST", checked.message);

  try {
    const result = await handler(checked.value, ctx);
    if (!isJsonObject(result)) throw new TypeError("handler result is not an object");
    return success(request_id, result);
  } catch (e) {
    if (isServerFsError(e)) return failure(request_id, e.code, e.message);
    // a read that met a failing disk or a database locked past its busy timeout
    if (isStorageFault(e)) return failure(request_id, "BRIDGE_STORAGE_ERROR", storageError(e).message);
    dispatch.onUnexpected?.(method, e);
    return failure(request_id, "BRIDGE_PROTOCOL_ERROR", INTERNAL_FAILURE);
  }
}
