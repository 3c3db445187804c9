/**
 * The `requestState` of an approval or question asked as a multi-round-trip request (revision
 * 2026-07-28, docs/elicitation.md#protocol-revisions): what the retry must bring back for its answer to
 * count. It names the tool, the task and the request, and expires with the request (at most 10
 * minutes after it was issued); it is signed, not encrypted (the client may read those ids, which the
 * form shows anyway), with the SDK's HMAC-SHA256 codec under the key of `state-key.ts` and bound to
 * the MCP method. Whatever fails here is `REQUEST_STATE_INVALID`, and nothing is decided.
 */
import { createRequestStateCodec, type RequestStateCodec, type ServerContext } from "@modelcontextprotocol/server";
import * as v from "valibot";
import { ServerFsError } from "../../../../shared/errors.ts";
import { loadStateKey, StateKeyUnavailable } from "./state-key.ts";

/** How long an issued state stays valid at most, in seconds; a request that expires sooner takes it earlier. */
const STATE_TTL_SECONDS = 600;

const Claim = v.strictObject({ v: v.literal(1), tool: v.string(), task_id: v.string(), request_id: v.string(), exp: v.number() });
type Claim = v.InferOutput<typeof Claim>;

/** Why the codec refused a state (its fixed reasons), as the client is told. */
const REASONS: Record<string, string> = {
  malformed: "it is not a requestState this server issued",
  mac: "it was not issued by this server or was altered",
  expired: "it has expired",
  bind: "it was issued for another method",
};

export const invalidState = (reason: string) => new ServerFsError("REQUEST_STATE_INVALID", `the requestState is refused: ${reason}; nothing was decided`);

/** One codec per key file: a process keeps the key it first read. */
const codecs = new Map<string, RequestStateCodec<unknown>>();

/** The codec of the key in `stateDir`; throws StateKeyUnavailable. */
function codecFor(stateDir: string): RequestStateCodec<unknown> {
  let codec = codecs.get(stateDir);
  if (!codec) {
    codec = createRequestStateCodec({ key: loadStateKey(stateDir), ttlSeconds: STATE_TTL_SECONDS, bind: (ctx) => ctx.mcpReq.method });
    codecs.set(stateDir, codec);
  }
  return codec;
}

/** The seconds since the epoch at which a request that expires at `expiresAt` (ISO 8601, or null) stops being answerable here. */
export function expiryFor(expiresAt: string | null, now = Date.now()): number {
  const cap = Math.floor(now / 1000) + STATE_TTL_SECONDS;
  if (expiresAt === null) return cap;
  const at = Math.floor(Date.parse(expiresAt) / 1000);
  return Number.isFinite(at) ? Math.min(cap, at) : cap;
}

/** A signed state for `claim`; throws StateKeyUnavailable when there is no key to sign with. */
export function mintState(stateDir: string, claim: Claim, ctx: ServerContext): Promise<string> {
  return codecFor(stateDir).mint(claim, ctx);
}

/**
 * The claim of a state the retry brought back, checked against the call that brought it (the tool and
 * the task it names); throws REQUEST_STATE_INVALID.
 */
export async function verifyState(stateDir: string, state: string, ctx: ServerContext, call: { tool: string; taskId: string }): Promise<Claim> {
  let decoded: unknown;
  try {
    decoded = await codecFor(stateDir).verify(state, ctx);
  } catch (e) {
    if (e instanceof StateKeyUnavailable) throw invalidState("this server has no key to verify it with");
    throw invalidState(REASONS[e instanceof Error ? e.message : ""] ?? REASONS["malformed"]!);
  }
  const parsed = v.safeParse(Claim, decoded);
  if (!parsed.success) throw invalidState(REASONS["malformed"]!);
  const claim = parsed.output;
  // `exp` is the request's expiry rounded down to the second: from that second on it is answerable nowhere
  if (claim.exp <= Math.floor(Date.now() / 1000)) throw invalidState(REASONS["expired"]!);
  if (claim.tool !== call.tool || claim.task_id !== call.taskId) throw invalidState("it was issued for another task or tool");
  return claim;
}
