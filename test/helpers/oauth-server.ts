/**
 * A real OAuth 2.1 authorization server on loopback for the tests: `oidc-provider` with resource
 * indicators (RFC 8707), issuing JWT access tokens whose audience is the ServerFS resource, by client
 * credentials and by authorization code with PKCE (its login and consent are answered at once, as a
 * user who always agrees would). The tests also hold its signing key, to forge tokens that differ from
 * a real one in exactly one claim.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import Provider from "oidc-provider";

export const ALL_SCOPES = "serverfs:read serverfs:write serverfs:agent";

export interface AuthServer {
  issuer: string;
  /** Requests to the JWKS endpoint so far (to see that refetches are bounded). */
  jwksFetches(): number;
  /** An access token by client credentials for `resource` with `scope`, from the confidential client `svc`. */
  clientCredentials(resource: string, scope: string): Promise<string>;
  /** A JWT signed with the server's own key: the claims of a real token unless overridden. */
  forge(claims: Record<string, unknown>, header?: Record<string, unknown>): Promise<string>;
  /** The public signing key as published in the JWKS. */
  publicJwk: JWK;
  close(): Promise<void>;
}

export const CLIENT_SECRET = "svc-secret-for-tests-only-0123456789";

export async function startAuthServer(): Promise<AuthServer> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | null = null;
  let jwks = 0;
  const server: Server = createServer((req, res) => {
    if (req.url?.startsWith("/jwks")) jwks++;
    handler?.(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const issuer = `http://127.0.0.1:${port}`;

  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const rsa = await generateKeyPair("RS256", { extractable: true });
  const kid = "test-es256";
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: "ES256", use: "sig" };
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" };
  const rsaJwk = { ...(await exportJWK(rsa.privateKey)), kid: "test-rs256", alg: "RS256", use: "sig" };

  const provider = new Provider(issuer, {
    clients: [{ client_id: "svc", client_secret: CLIENT_SECRET, grant_types: ["client_credentials"], redirect_uris: [], response_types: [] }],
    jwks: { keys: [privateJwk, rsaJwk] },
    cookies: { keys: ["cookie-key-for-tests-only"] },
    // the resource scopes too, so a dynamically registered client may name them in its metadata
    scopes: ["openid", "offline_access", ...ALL_SCOPES.split(" ")],
    ttl: { ClientCredentials: 600, AccessToken: 600, Grant: 600, Interaction: 600, Session: 600, AuthorizationCode: 60 },
    findAccount: async (_ctx: unknown, id: string) => ({ accountId: id, claims: async () => ({ sub: id }) }),
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => ({
          scope: ALL_SCOPES,
          audience: resource,
          accessTokenTTL: 600,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: "ES256" } },
        }),
      },
    },
  });
  const callback = provider.callback();

  /** Login as `alice`, then consent to every scope asked for the resource asked: an agreeable user. */
  async function interact(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const details = await provider.interactionDetails(req, res);
    if (details.prompt.name === "login") {
      await provider.interactionFinished(req, res, { login: { accountId: "alice" } }, { mergeWithLastSubmission: false });
      return;
    }
    const grant = new provider.Grant({ accountId: details.session!.accountId, clientId: String(details.params["client_id"]) });
    const missing = details.prompt.details as { missingOIDCScope?: string[]; missingResourceScopes?: Record<string, string[]> };
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
    for (const [resource, scopes] of Object.entries(missing.missingResourceScopes ?? {})) grant.addResourceScope(resource, scopes.join(" "));
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }

  handler = (req, res) => {
    if (req.url?.startsWith("/interaction/")) {
      interact(req, res).catch(() => {
        res.statusCode = 500;
        res.end();
      });
      return;
    }
    callback(req, res);
  };

  return {
    issuer,
    publicJwk,
    jwksFetches: () => jwks,
    async clientCredentials(resource, scope) {
      const r = await fetch(`${issuer}/token`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          authorization: `Basic ${Buffer.from(`svc:${CLIENT_SECRET}`).toString("base64")}`,
        },
        body: new URLSearchParams({ grant_type: "client_credentials", resource, scope }),
      });
      const body = (await r.json()) as Record<string, unknown>;
      if (!r.ok) throw new Error(`token endpoint: ${JSON.stringify(body)}`);
      return String(body["access_token"]);
    },
    async forge(claims, header = {}) {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: issuer, sub: "svc", client_id: "svc", scope: ALL_SCOPES, iat: now, exp: now + 600, ...claims })
        .setProtectedHeader({ alg: "ES256", kid, typ: "at+jwt", ...header })
        .sign(privateKey);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Follows an authorization URL the way a browser would (redirects, cookies) through the automatic
 * login and consent, and returns the URL the authorization server finally sends the user back to.
 */
export async function authorizeInBrowser(url: URL, redirectPrefix: string): Promise<URL> {
  const jar = new Map<string, string>();
  let next = url.toString();
  for (let hop = 0; hop < 20; hop++) {
    if (next.startsWith(redirectPrefix)) return new URL(next);
    const r = await fetch(next, { redirect: "manual", headers: { cookie: [...jar].map(([k, val]) => `${k}=${val}`).join("; ") } });
    for (const c of r.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const eq = pair!.indexOf("=");
      jar.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    await r.text();
    const location = r.headers.get("location");
    if (!location) throw new Error(`authorization stopped at ${r.status}`);
    next = new URL(location, next).toString();
  }
  throw new Error("too many redirects");
}
