/**
 * The Bridge RPC client, used by the MCP role and the operator commands (docs/mcp-tools.md#bridge-calls):
 * per call one fresh connection to the socket, one request line, one response line, close. Offers `BridgeClient` (`call`),
 * `BridgeClientOptions`, `CallOptions`, `knownHostPaths(config)`.
 *
 * Failures, as the docs/mcp-tools.md#bridge-calls mapping table has them:
 * - connect fails, an OS error during the exchange, the timeout, or the caller's abort →
 *   AGENT_BRIDGE_UNAVAILABLE;
 * - a response that is not one line of JSON, over 1 MiB, with the wrong key set, another
 *   `request_id`, a non-boolean `ok`, a non-object `result`, a malformed `error` or code, or a
 *   result its method's schema in METHOD_RESULTS refuses → AGENT_BRIDGE_PROTOCOL_ERROR;
 * - anything else unexpected → AGENT_BRIDGE_ERROR;
 * - a Bridge error → `RelayedError(code, message)` verbatim, unless the message names a known host
 *   path: then the message is replaced by a fixed phrase and the code kept.
 * An encoded request over 1 MiB is never sent (REQUEST_TOO_LARGE). Sockets and timers are unref'd:
 * a call in flight never delays process exit. `call(method, params)` takes `ParamsInput<M>` and
 * answers `Result<M>`, the answer checked against the method's result schema (its unknown fields
 * kept; docs/decisions.md, "The Bridge client checks every result").
 */

import { createConnection } from "node:net";
import { resolve } from "node:path";
import * as v from "valibot";
import { byteSize } from "../byte-size.ts";
import { type Config, expandHome } from "../config/load.ts";
import { RelayedError, ServerFsError } from "../errors.ts";
import { newRpcRequestId } from "../ids.ts";
import { LIMITS } from "../limits.ts";
import { decodeStrict } from "../utf8.ts";
import { keySetMatches } from "./check.ts";
import { ErrorBodySchema, ErrorResponseSchema, isJsonObject, PROTOCOL_VERSION, SuccessResponseSchema } from "./envelope.ts";
import type { Method, ParamsInput } from "./methods.ts";
import { METHOD_RESULTS, type Result } from "./results.ts";

export interface BridgeClientOptions {
  socketPath: string;
  /** `[bridge] rpc_timeout_seconds`, in milliseconds. */
  timeoutMs: number;
  /** Absolute host paths a relayed message must never carry (see `knownHostPaths`). */
  knownPaths: readonly string[];
}

export interface CallOptions {
  /** The MCP call's own end: aborting it ends the exchange at once. */
  signal?: AbortSignal;
  /** Added to the timeout (`read_agent_task_events` adds its `wait_ms`). */
  extraTimeoutMs?: number;
}

const LF = 0x0a;
const WITHHELD = "the Bridge's message was withheld because it named a host path";

/** What to do next travels with every unavailability: the person behind the client can act on it. */
const NEXT_STEP = "is `serverfs bridge` running as this user? `serverfs doctor` checks the setup";
const unavailable = (phrase: string) => new ServerFsError("AGENT_BRIDGE_UNAVAILABLE", `${phrase}; ${NEXT_STEP}`);
/** The caller itself gave up (its client cancelled): nothing is wrong with the Bridge. */
const cancelled = () => new ServerFsError("AGENT_BRIDGE_UNAVAILABLE", "the Bridge call was cancelled");
const malformed = (phrase: string) => new ServerFsError("AGENT_BRIDGE_PROTOCOL_ERROR", phrase);

/** The absolute paths of docs/mcp-tools.md#bridge-calls's safety net, as this role's config names them. */
export function knownHostPaths(config: Config): string[] {
  const { file, bridge } = config;
  const configured = [file.bridge.socket_path, file.bridge.mcp_socket_path, file.bridge.state_dir, file.bridge.lock_dir, file.bridge.mcp_lock_dir]
    .filter((p) => p !== "")
    .map((p) => expandHome(p));
  return [...config.workdirs.flatMap((w) => w.knownPaths), bridge.socketPath, bridge.stateDir, bridge.lockDir, ...configured];
}

export class BridgeClient {
  private readonly knownPaths: string[];

  constructor(private readonly options: BridgeClientOptions) {
    // "/" would match every message with a slash in it; only real directories are a leak
    const normalized = options.knownPaths.filter((p) => p.startsWith("/")).map((p) => resolve(p));
    this.knownPaths = [...new Set(normalized)].filter((p) => p !== "/");
  }

  static fromConfig(config: Config): BridgeClient {
    return new BridgeClient({
      socketPath: config.bridge.socketPath,
      timeoutMs: config.bridge.rpc_timeout_seconds * 1000,
      knownPaths: knownHostPaths(config),
    });
  }

  async call<M extends Method>(method: M, params: ParamsInput<M>, options: CallOptions = {}): Promise<Result<M>> {
    const requestId = newRpcRequestId();
    const line = Buffer.from(JSON.stringify({ protocol_version: PROTOCOL_VERSION, request_id: requestId, method, params }), "utf8");
    if (line.length > LIMITS.max_line_bytes) throw new ServerFsError("REQUEST_TOO_LARGE", `the request is over ${byteSize(LIMITS.max_line_bytes)}`);
    try {
      const response = await exchange(this.options.socketPath, line, this.options.timeoutMs + (options.extraTimeoutMs ?? 0), options.signal);
      return this.interpret(response, requestId, method);
    } catch (e) {
      if (e instanceof ServerFsError) throw e;
      throw new ServerFsError("AGENT_BRIDGE_ERROR", "the Bridge call failed unexpectedly", { cause: e });
    }
  }

  private interpret<M extends Method>(bytes: Buffer, requestId: string, method: M): Result<M> {
    const text = decodeStrict(bytes);
    if (text === null) throw malformed("the Bridge's response is not valid UTF-8");
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw malformed("the Bridge's response is not one line of JSON");
    }
    if (!isJsonObject(value)) throw malformed("the Bridge's response is not a JSON object");
    const isError = Object.hasOwn(value, "error");
    if (!keySetMatches(isError ? ErrorResponseSchema : SuccessResponseSchema, value)) {
      throw malformed("the Bridge's response has the wrong key set");
    }
    const { ok, request_id } = value;
    // a request_id of null is how the Bridge answers a line it could not attribute (peer check)
    if (request_id !== requestId && !(isError && request_id === null)) {
      throw malformed("the Bridge's response answers another request");
    }
    if (typeof ok !== "boolean") throw malformed("the Bridge's response ok is not a boolean");
    if (ok === isError) throw malformed("the Bridge's response has the wrong key set");
    if (isError) throw this.relay(value["error"]);
    const result = value["result"];
    if (!isJsonObject(result)) throw malformed("the Bridge's result is not an object");
    const parsed = v.safeParse(METHOD_RESULTS[method], result);
    if (!parsed.success) throw malformed("the Bridge's result does not have the expected shape");
    return parsed.output;
  }

  private relay(error: unknown): RelayedError {
    if (!isJsonObject(error) || !keySetMatches(ErrorBodySchema, error)) throw malformed("the Bridge's error is malformed");
    const { code, message } = error;
    if (typeof code !== "string" || typeof message !== "string") throw malformed("the Bridge's error is malformed");
    if (!v.is(ErrorBodySchema, error)) throw malformed("the Bridge's error code is malformed");
    return new RelayedError(code, this.knownPaths.some((p) => message.includes(p)) ? WITHHELD : message);
  }
}

/** Sends one line and resolves with the first response line (its LF dropped). */
function exchange(socketPath: string, line: Buffer, timeoutMs: number, signal: AbortSignal | undefined): Promise<Buffer> {
  return new Promise((resolvePromise, reject) => {
    if (signal?.aborted) return reject(cancelled());
    const socket = createConnection({ path: socketPath });
    socket.unref();
    const chunks: Buffer[] = [];
    let received = 0;
    let connected = false;
    let settled = false;
    const settle = (outcome: Buffer | ServerFsError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      socket.destroy();
      if (outcome instanceof ServerFsError) reject(outcome);
      else resolvePromise(outcome);
    };
    const onAbort = () => settle(cancelled());
    const timer = setTimeout(() => settle(unavailable("the Agent Bridge did not answer in time")), timeoutMs);
    timer.unref();
    signal?.addEventListener("abort", onAbort, { once: true });

    socket.on("connect", () => {
      connected = true;
      socket.write(Buffer.concat([line, Buffer.from([LF])]));
    });
    socket.on("data", (chunk: Buffer) => {
      const nl = chunk.indexOf(LF);
      const head = nl === -1 ? chunk : chunk.subarray(0, nl);
      chunks.push(head);
      received += head.length;
      if (received > LIMITS.max_line_bytes) settle(malformed(`the Bridge's response is over ${byteSize(LIMITS.max_line_bytes)}`));
      else if (nl !== -1) settle(Buffer.concat(chunks));
    });
    socket.on("error", () => {
      settle(unavailable(connected ? "the connection to the Agent Bridge failed" : "the Agent Bridge is not reachable"));
    });
    socket.on("close", () => {
      settle(
        received === 0 ? unavailable("the Agent Bridge closed the connection without answering") : malformed("the Bridge's response is not one line of JSON"),
      );
    });
  });
}
