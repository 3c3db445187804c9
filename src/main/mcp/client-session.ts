/**
 * What one MCP session knows of its client (docs/elicitation.md): the agent tasks it submitted, kept
 * in memory for the session's life only, and whether a call of it may ask the human a form question
 * (`elicitation/create`, form mode) before it answers.
 */
import { CLIENT_CAPABILITIES_META_KEY, type ElicitRequestFormParams, type ElicitResult, type Server, type ServerContext } from "@modelcontextprotocol/server";
import * as v from "valibot";

export interface ClientSession {
  /** Tasks submit_agent_task created in this session (an idempotent replay of another's never counts). */
  readonly submitted: Set<string>;
  /**
   * No session at all: revision 2026-07-28 over HTTP, one server per request. Any caller that names a
   * task may then be asked its forms (docs/decisions.md#elicitation).
   */
  readonly stateless: boolean;
}

/**
 * What a 2026-07-28 call brings for a multi-round-trip request (docs/elicitation.md#protocol-revisions):
 * whether its client may be answered an InputRequiredResult with a form, and, on a retry, the
 * client's `inputResponses` and the `requestState` it echoed (unverified, as sent).
 */
export interface RoundTrip {
  ctx: ServerContext;
  mayAsk: boolean;
  responses: Record<string, unknown> | undefined;
  state: string | undefined;
}

export type ElicitForm = Pick<ElicitRequestFormParams, "message" | "requestedSchema">;

/**
 * Asks the human one form within the call in flight; rejects when the client fails, times out, the call
 * ends or `withdraw` aborts (the client is then told the request is cancelled).
 */
export type Ask = (form: ElicitForm, withdraw: AbortSignal) => Promise<ElicitResult>;

/**
 * How long a form may stay open. A human may take a while; the SDK's own default (60 s) is too short,
 * and a form left open past this is treated like a cancel: the request stays pending.
 */
export const ASK_TIMEOUT_MS = 30 * 60_000;

/** Form mode is what a client offers when it declares `elicitation` with `form`, or with neither mode (the older form). */
function offersForms(capabilities: { elicitation?: { form?: unknown; url?: unknown } } | undefined): boolean {
  const e = capabilities?.elicitation;
  if (!e) return false;
  return e.form !== undefined || e.url === undefined;
}

/**
 * The asker of one call: the request goes out on the call's own related-request stream
 * (`ctx.mcpReq.send`), so it works over stdio and over Streamable HTTP without a GET stream. Null
 * when the client declared no form elicitation or `[server] elicitation` is off.
 */
export function askerFor(server: Server, enabled: boolean, ctx: ServerContext, processEnd: AbortSignal): Ask | null {
  if (!enabled || !offersForms(server.getClientCapabilities())) return null;
  const signal = AbortSignal.any([processEnd, ctx.mcpReq.signal]);
  // `send`, not `elicitInput`: the answer is checked by the form's own reader (pending-form.ts), so a
  // mistyped one is "refused" and audited as such rather than failing the request
  return (form, withdraw) =>
    ctx.mcpReq.send(
      { method: "elicitation/create", params: { mode: "form", ...form } },
      { signal: AbortSignal.any([signal, withdraw]), timeout: ASK_TIMEOUT_MS },
    );
}

/** The part of a 2026-07-28 request's `_meta` envelope read here (the SDK has checked its shape). */
const Envelope = v.looseObject({
  [CLIENT_CAPABILITIES_META_KEY]: v.optional(
    v.looseObject({ elicitation: v.optional(v.looseObject({ form: v.optional(v.unknown()), url: v.optional(v.unknown()) })) }),
  ),
});

/**
 * The round trip of a 2026-07-28 call: the capabilities are the request's own (its `_meta`), and the
 * SDK has lifted `inputResponses` and `requestState` out of its params.
 */
export function roundTripOf(enabled: boolean, ctx: ServerContext): RoundTrip {
  const state = ctx.mcpReq.requestState<unknown>();
  return {
    ctx,
    mayAsk: enabled && offersForms(v.parse(Envelope, ctx.mcpReq.envelope ?? {})[CLIENT_CAPABILITIES_META_KEY]),
    responses: ctx.mcpReq.inputResponses,
    state: typeof state === "string" ? state : undefined,
  };
}
