/**
 * Validating an access token (docs/mcp-tools.md#oauth) with `jose`: a JWT signed by a key of the
 * issuer's JWKS with an asymmetric algorithm of ALGORITHMS (never `none`, never HMAC, so a public key
 * can never serve as a shared secret), from `issuer`, for `resource`, within `exp`/`nbf` give or take
 * SKEW_SECONDS. The JWKS is cached; an unknown `kid` refetches it at most once per COOLDOWN_MS, so a
 * flood of made-up key ids costs the authorization server one request per interval at most.
 */
import { createRemoteJWKSet, errors, type JWTPayload, jwtVerify } from "jose";
import { opaqueValue } from "../../../shared/opaque-value.ts";
import type { Identity } from "./identity.ts";
import { checkedUrl, type OAuthSettings } from "./settings.ts";

export const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"];
export const SKEW_SECONDS = 60;
export const COOLDOWN_MS = 30_000;
const CACHE_MAX_AGE_MS = 10 * 60_000;
const FETCH_TIMEOUT_MS = 5_000;

/** Why a token was refused: `invalid` is the token's fault (401), `unavailable` the key source's (503). */
export class TokenRefused extends Error {
  constructor(
    readonly kind: "invalid" | "unavailable",
    readonly reason: string,
  ) {
    super(reason);
  }
}

/** The scopes a token grants: RFC 9068's space-separated `scope`, or `scp` as some servers spell it. */
function scopesOf(payload: JWTPayload): Set<string> {
  const raw = payload["scope"] ?? payload["scp"];
  const list = Array.isArray(raw) ? raw : typeof raw === "string" ? raw.split(" ") : [];
  return new Set(list.filter((s): s is string => typeof s === "string" && s !== ""));
}

/**
 * A `sub` or client id as the audit log and the task's `submitter` record it: the Bridge's rule for
 * opaque values (no control characters, bounded length). A token naming someone in a way that cannot be
 * recorded is refused rather than recorded cut.
 */
function identityClaim(value: unknown): string | null {
  if (typeof value !== "string") return null;
  try {
    return opaqueValue(value, "identity", "INVALID_ARGUMENT");
  } catch {
    throw new TokenRefused("invalid", "claim_identity");
  }
}

/** A jose failure as the reason the audit log names (a fixed word, never the token's content). */
function reasonOf(e: unknown): TokenRefused {
  if (e instanceof TokenRefused) return e;
  if (e instanceof errors.JWTExpired) return new TokenRefused("invalid", "expired");
  if (e instanceof errors.JWTClaimValidationFailed) return new TokenRefused("invalid", `claim_${e.claim}`);
  if (e instanceof errors.JOSEAlgNotAllowed) return new TokenRefused("invalid", "algorithm");
  if (e instanceof errors.JWKSNoMatchingKey || e instanceof errors.JWKSMultipleMatchingKeys) return new TokenRefused("invalid", "unknown_key");
  if (e instanceof errors.JWSSignatureVerificationFailed) return new TokenRefused("invalid", "signature");
  if (e instanceof errors.JWKSTimeout || e instanceof errors.JWKSInvalid) return new TokenRefused("unavailable", "jwks_unavailable");
  if (e instanceof errors.JOSEError) return new TokenRefused("invalid", "malformed");
  return new TokenRefused("unavailable", "jwks_unavailable");
}

/** RFC 8414's well-known URL of an issuer (the suffix before its path), then OIDC discovery's (after it). */
function discoveryUrls(issuer: string): URL[] {
  const url = new URL(issuer);
  const path = url.pathname === "/" ? "" : url.pathname.replace(/\/$/, "");
  return [new URL(`${url.origin}/.well-known/oauth-authorization-server${path}`), new URL(`${url.origin}${path}/.well-known/openid-configuration`)];
}

export class TokenVerifier {
  private keys: ReturnType<typeof createRemoteJWKSet> | null = null;
  private discovering: Promise<ReturnType<typeof createRemoteJWKSet>> | null = null;
  private lastDiscoveryFailure = Number.NEGATIVE_INFINITY;

  constructor(private readonly settings: OAuthSettings) {
    if (settings.jwksUri) this.keys = this.remote(settings.jwksUri);
  }

  private remote(url: URL) {
    return createRemoteJWKSet(url, { cooldownDuration: COOLDOWN_MS, cacheMaxAge: CACHE_MAX_AGE_MS, timeoutDuration: FETCH_TIMEOUT_MS });
  }

  /** The JWKS, discovered from the issuer's metadata once (a failure is retried after COOLDOWN_MS). */
  private async jwks() {
    if (this.keys) return this.keys;
    if (Date.now() - this.lastDiscoveryFailure < COOLDOWN_MS) throw new TokenRefused("unavailable", "discovery_failed");
    this.discovering ??= this.discover().then(
      (keys) => (this.keys = keys),
      (e: unknown) => {
        this.lastDiscoveryFailure = Date.now();
        this.discovering = null;
        throw e;
      },
    );
    return this.discovering;
  }

  private async discover() {
    for (const url of discoveryUrls(this.settings.issuer)) {
      let metadata: Record<string, unknown>;
      try {
        const r = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: "error" });
        if (!r.ok) continue;
        metadata = (await r.json()) as Record<string, unknown>;
      } catch {
        continue;
      }
      // RFC 8414 §3.3: metadata naming another issuer must not be used.
      if (metadata["issuer"] !== this.settings.issuer || typeof metadata["jwks_uri"] !== "string") continue;
      try {
        // a discovered jwks_uri is held to the rules of a configured one
        return this.remote(checkedUrl("jwks_uri", metadata["jwks_uri"]));
      } catch {
        throw new TokenRefused("unavailable", "discovery_failed");
      }
    }
    throw new TokenRefused("unavailable", "discovery_failed");
  }

  async verify(token: string): Promise<Identity> {
    try {
      const { payload } = await jwtVerify(token, await this.jwks(), {
        issuer: this.settings.issuer,
        audience: this.settings.resource,
        algorithms: ALGORITHMS,
        clockTolerance: SKEW_SECONDS,
        requiredClaims: ["exp"],
      });
      return { sub: identityClaim(payload.sub), clientId: identityClaim(payload["client_id"]) ?? identityClaim(payload["azp"]), scopes: scopesOf(payload) };
    } catch (e) {
      throw reasonOf(e);
    }
  }
}
