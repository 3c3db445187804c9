/**
 * `[server.http.oauth]` (docs/configuration.md#serverhttpoauth), checked before anything listens:
 * the authorization server (`issuer`), this server's canonical URL (`resource`, the audience every
 * token must carry) and, optionally, the JWKS to take keys from. Off loopback every URL must be https,
 * since keys fetched or tokens sent over plain HTTP could be changed on the way.
 */
import { ConfigError } from "../../../shared/config/load.ts";
import type { ConfigFile } from "../../../shared/config/schema.ts";
import { isLoopback } from "../../http-gate.ts";

export interface OAuthSettings {
  issuer: string;
  /** The canonical URL, exactly as configured: tokens' `aud` is compared with it as a string. */
  resource: string;
  jwksUri: URL | null;
  /** Where the Protected Resource Metadata is served (RFC 9728 §3.1: the well-known prefix before the resource's path). */
  metadataPath: string;
  /** Its public URL, named by `WWW-Authenticate`'s `resource_metadata`. */
  metadataUrl: string;
}

type HttpConfig = ConfigFile["server"]["http"];

const KEY = "server.http.oauth";
export const WELL_KNOWN = "/.well-known/oauth-protected-resource";

/** An absolute https URL (http only to a loopback host) without credentials or fragment. */
export function checkedUrl(key: string, value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`${KEY}.${key}: is not an absolute URL`);
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopback(url.hostname.replace(/^\[|\]$/g, "")))) {
    throw new ConfigError(`${KEY}.${key}: must be an https URL (http is allowed only for a loopback host)`);
  }
  if (url.username || url.password || url.hash || value.includes("#")) throw new ConfigError(`${KEY}.${key}: must not carry credentials or a fragment`);
  return url;
}

/** The checked OAuth settings, or null when `[server.http.oauth]` is absent. */
export function oauthSettings(http: HttpConfig): OAuthSettings | null {
  const oauth = http.oauth;
  if (!oauth) return null;
  if (http.bearer_token_file !== "") {
    throw new ConfigError(`${KEY}: cannot be combined with server.http.bearer_token_file (use OAuth or the static token, not both)`);
  }
  checkedUrl("issuer", oauth.issuer);
  const resource = checkedUrl("resource", oauth.resource);
  if (resource.search) throw new ConfigError(`${KEY}.resource: must not carry a query`);
  const jwksUri = oauth.jwks_uri === undefined ? null : checkedUrl("jwks_uri", oauth.jwks_uri);
  const path = resource.pathname === "/" ? "" : resource.pathname.replace(/\/$/, "");
  return {
    issuer: oauth.issuer,
    resource: oauth.resource,
    jwksUri,
    metadataPath: `${WELL_KNOWN}${path}`,
    metadataUrl: `${resource.origin}${WELL_KNOWN}${path}`,
  };
}
