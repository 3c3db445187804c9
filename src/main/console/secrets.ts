/**
 * The console's secrets (docs/console.md#access): the access token (from `[console] token_file`, else
 * fresh for each start), an optional read-only metrics token, and the CSRF token every POST carries.
 * The access token arrives once in the URL (`/?token=…`) and then travels in an HttpOnly, SameSite=Strict
 * cookie; programs may send it as `Authorization: Bearer …`. Offers `ConsoleSecrets`, `loadSecrets`,
 * `COOKIE`, `cookieValue`, `bearerValue`.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Config } from "../../shared/config/load.ts";
import { header, readPrivateSecret } from "../http-gate.ts";

export interface ConsoleSecrets {
  token: string;
  /** Whether the token came from the config's file (then the printed URL leaves it out). */
  fromFile: boolean;
  /** Opens `GET /metrics` only; null: `/metrics` takes the access token. */
  metricsToken: string | null;
  csrf: string;
}

const fresh = () => randomBytes(32).toString("base64url");

export function loadSecrets(config: Config): ConsoleSecrets {
  const { token_file, metrics_token_file } = config.file.console;
  return {
    token: token_file === "" ? fresh() : readPrivateSecret(token_file, "console.token_file"),
    fromFile: token_file !== "",
    metricsToken: metrics_token_file === "" ? null : readPrivateSecret(metrics_token_file, "console.metrics_token_file"),
    csrf: fresh(),
  };
}

export const COOKIE = "serverfs_console";

/** The console cookie's value, or null; a Cookie header naming it twice gets null (judged on one value only). */
export function cookieValue(req: IncomingMessage): string | null {
  const found = (header(req, "cookie") ?? "")
    .split(";")
    .map((c) => c.trim())
    .filter((c) => c.startsWith(`${COOKIE}=`));
  return found.length === 1 ? found[0]!.slice(COOKIE.length + 1) : null;
}

export function bearerValue(req: IncomingMessage): string | null {
  const auth = header(req, "authorization");
  return auth?.startsWith("Bearer ") ? auth.slice("Bearer ".length) : null;
}
