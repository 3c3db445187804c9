/**
 * What one MCP session knows of its client (docs/elicitation.md): the agent tasks it submitted, kept
 * in memory for the session's life only, and whether a call of it may ask the human a form question
 * (`elicitation/create`, form mode) before it answers.
 */
import type { ElicitRequestFormParams, ElicitResult, Server, ServerContext } from "@modelcontextprotocol/server";

export interface ClientSession {
  /** Tasks submit_agent_task created in this session (an idempotent replay of another's never counts). */
  readonly submitted: Set<string>;
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
function offersForms(server: Server): boolean {
  const e = server.getClientCapabilities()?.elicitation;
  if (!e) return false;
  return e.form !== undefined || e.url === undefined;
}

/**
 * The asker of one call: the request goes out on the call's own related-request stream
 * (`ctx.mcpReq.send`), so it works over stdio and over Streamable HTTP without a GET stream. Null
 * when the client declared no form elicitation or `[server] elicitation` is off.
 */
export function askerFor(server: Server, enabled: boolean, ctx: ServerContext, processEnd: AbortSignal): Ask | null {
  if (!enabled || !offersForms(server)) return null;
  const signal = AbortSignal.any([processEnd, ctx.mcpReq.signal]);
  // `send`, not `elicitInput`: the answer is checked by the form's own reader (pending-form.ts), so a
  // mistyped one is "refused" and audited as such rather than failing the request
  return (form, withdraw) =>
    ctx.mcpReq.send(
      { method: "elicitation/create", params: { mode: "form", ...form } },
      { signal: AbortSignal.any([signal, withdraw]), timeout: ASK_TIMEOUT_MS },
    );
}
