/**
 * The SDK's low-level `Server` (the v2 line, `@modelcontextprotocol/server`) with the two 2025-11-25
 * wire forms ServerFS keeps that the v2 line no longer emits by itself (docs/decisions.md, "MCP SDK
 * v2 line"): a task-augmented `tools/call` answers a `CreateTaskResult` (`{ task }`), which the SDK's
 * own `tools/call` result check refuses as a tool result without content; and a resource that does
 * not exist is JSON-RPC -32002, which the SDK rewrites to -32602 (the 2026-07-28 code) on every
 * revision. Both only on a 2025-era connection; a 2026-07-28 one gets the SDK's forms.
 */
import {
  type JSONRPCMessage,
  type JSONRPCRequest,
  ProtocolErrorCode,
  type Result,
  Server,
  type ServerContext,
  SUPPORTED_PROTOCOL_VERSIONS,
  type Transport,
  type TransportSendOptions,
} from "@modelcontextprotocol/server";

/** JSON-RPC "resource not found" of revision 2025-11-25 (docs/mcp-tools.md#resources). */
export const RESOURCE_NOT_FOUND = -32002;

type Handler = (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>;

export class LegacyWireServer extends Server {
  /** Requests in flight whose -32602 answer is really a resource that does not exist. */
  private readonly notFound = new Set<JSONRPCRequest["id"]>();

  /** A 2025-era connection: every revision the SDK lists as supported predates 2026-07-28. */
  get legacyEra(): boolean {
    const version = this.getNegotiatedProtocolVersion();
    return version === undefined || SUPPORTED_PROTOCOL_VERSIONS.includes(version);
  }

  /** A task-augmented tools/call on a 2025-era connection answers its CreateTaskResult as it is. */
  protected override _wrapHandler(method: string, handler: Handler): Handler {
    const wrapped = super._wrapHandler(method, handler);
    if (method !== "tools/call") return wrapped;
    return (request, ctx) => (this.legacyEra && request.params?.["task"] !== undefined ? handler(request, ctx) : wrapped(request, ctx));
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
