/**
 * The SDK's low-level `Server` (the v2 line, `@modelcontextprotocol/server`) with what ServerFS
 * corrects on the wire of each era (docs/decisions.md#mcp-sdk). On a 2025-era connection, the two
 * 2025-11-25 forms the v2 line no longer emits by itself: a task-augmented `tools/call` answers a
 * `CreateTaskResult` (`{ task }`), which the SDK's own `tools/call` result check refuses as a tool
 * result without content; and a resource that does not exist is JSON-RPC -32002, which the SDK
 * rewrites to -32602 (the 2026-07-28 code) on every revision. On a 2026-07-28 connection, every
 * request's own protocol version is checked: over stdio the SDK checks it only when the connection
 * opens (docs/protocol.md), and a task handle (the Tasks extension) leaves without the empty
 * `content` the SDK adds to it.
 */
import {
  type JSONRPCMessage,
  type JSONRPCRequest,
  PROTOCOL_VERSION_META_KEY,
  ProtocolErrorCode,
  type Result,
  Server,
  type ServerContext,
  SUPPORTED_PROTOCOL_VERSIONS,
  type Transport,
  type TransportSendOptions,
  UnsupportedProtocolVersionError,
} from "@modelcontextprotocol/server";
import * as v from "valibot";
import { PROTOCOL_REVISIONS } from "../../shared/config/schema.ts";

/** The revisions after the 2025 era that a 2026-07-28 connection's requests may name. */
const MODERN_REVISIONS: readonly string[] = PROTOCOL_REVISIONS.filter((r) => !SUPPORTED_PROTOCOL_VERSIONS.includes(r));

/** The part of a request's `_meta` envelope read here (the SDK has already checked its shape). */
const Envelope = v.looseObject({ [PROTOCOL_VERSION_META_KEY]: v.optional(v.string()) });

/** JSON-RPC "resource not found" of revision 2025-11-25 (docs/mcp-tools.md#resources). */
export const RESOURCE_NOT_FOUND = -32002;

/**
 * A 2026-07-28 `CreateTaskResult` as SEP-2663 shapes it: the SDK's tools/call check adds `content: []`
 * to any tool result without content, a task handle included (docs/decisions.md#mcp-sdk).
 */
function withoutAddedContent(result: Result): Result {
  if (result["resultType"] !== "task") return result;
  const { content: _added, ...task } = result;
  return task;
}

type Handler = (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>;

export class WireServer extends Server {
  /** Requests in flight whose -32602 answer is really a resource that does not exist. */
  private readonly notFound = new Set<JSONRPCRequest["id"]>();

  /** A 2025-era connection: every revision the SDK lists as supported predates 2026-07-28. */
  get legacyEra(): boolean {
    const version = this.getNegotiatedProtocolVersion();
    return version === undefined || SUPPORTED_PROTOCOL_VERSIONS.includes(version);
  }

  /**
   * A task-augmented tools/call on a 2025-era connection answers its CreateTaskResult as it is; a
   * request on a 2026-07-28 connection that names a revision not served is -32022.
   */
  protected override _wrapHandler(method: string, handler: Handler): Handler {
    const wrapped = super._wrapHandler(method, handler);
    return (request, ctx) => {
      if (this.legacyEra) return method === "tools/call" && request.params?.["task"] !== undefined ? handler(request, ctx) : wrapped(request, ctx);
      const requested = v.parse(Envelope, ctx.mcpReq.envelope ?? {})[PROTOCOL_VERSION_META_KEY];
      if (requested !== undefined && !MODERN_REVISIONS.includes(requested)) {
        throw new UnsupportedProtocolVersionError({ supported: [...MODERN_REVISIONS], requested });
      }
      return method === "tools/call" ? wrapped(request, ctx).then(withoutAddedContent) : wrapped(request, ctx);
    };
  }

  /** Runs `read`; a failure with -32002 leaves as -32002 on a 2025-era connection. */
  async keepingNotFound<T>(ctx: ServerContext, read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (e) {
      if (this.legacyEra && (e as { code?: unknown }).code === RESOURCE_NOT_FOUND) this.notFound.add(ctx.mcpReq.id);
      throw e;
    }
  }

  override connect(transport: Transport): Promise<void> {
    return super.connect(this.keepNotFoundCode(transport));
  }

  /** `transport` whose outgoing error answers to the requests in `notFound` carry -32002 again. */
  private keepNotFoundCode(transport: Transport): Transport {
    const send = (message: JSONRPCMessage, options?: TransportSendOptions) => {
      if ("error" in message && message.id !== undefined && this.notFound.delete(message.id) && message.error.code === ProtocolErrorCode.InvalidParams) {
        return transport.send({ ...message, error: { ...message.error, code: RESOURCE_NOT_FOUND } }, options);
      }
      return transport.send(message, options);
    };
    // Every other member, the transport's accessors (onmessage, onclose, ...) included, is the transport's own.
    return new Proxy(transport, {
      get: (target, key) => {
        if (key === "send") return send;
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
      set: (target, key, value) => Reflect.set(target, key, value, target),
    });
  }
}
