/**
 * Who a request's token speaks for: its `sub` and its client (`client_id`, else `azp`), with the
 * scopes it grants. It travels to the MCP handlers as the SDK's `authInfo` (without the token, which no
 * handler needs) and from there into each `tool_call` audit record and a submitted task's `submitter`.
 */
import type { AuthInfo } from "@modelcontextprotocol/server";

export interface Identity {
  sub: string | null;
  clientId: string | null;
  scopes: ReadonlySet<string>;
}

export function toAuthInfo(identity: Identity): AuthInfo {
  return { token: "", clientId: identity.clientId ?? "", scopes: [...identity.scopes], extra: { sub: identity.sub } };
}

/** The identity of an OAuth request, null for stdio and the static bearer token. */
export function identityOf(authInfo: AuthInfo | undefined): Identity | null {
  if (!authInfo) return null;
  const sub = authInfo.extra?.["sub"];
  return { sub: typeof sub === "string" ? sub : null, clientId: authInfo.clientId || null, scopes: new Set(authInfo.scopes) };
}

/** Who owns a session an identity opens: the same user through the same client (a refreshed or stepped-up token keeps both). */
export const ownerOf = (identity: Identity): string => JSON.stringify([identity.sub, identity.clientId]);

/** The audit fields of an identity: never the token, only whom it names. */
export const identityAudit = (identity: Identity | null) => (identity ? { sub: identity.sub, client_id: identity.clientId } : {});
