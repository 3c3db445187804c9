/**
 * Checking a JSON object against a strict valibot schema in the order the protocol prescribes:
 * key set first (a missing required key, or any unknown key), then the JSON types (docs/bridge-rpc.md
 * docs/bridge-rpc.md#envelope, docs/bridge-rpc.md#parameter-rules). Offers `checkObject` and `keySetMatches`. Messages name only keys the schema knows,
 * never a value or a key the peer invented.
 */
import * as v from "valibot";

export type StrictObject = v.StrictObjectSchema<v.ObjectEntries, undefined>;

export type CheckResult<T> = { ok: true; value: T } | { ok: false; message: string };

const OPTIONAL_TYPES = new Set(["optional", "nullish", "exact_optional"]);

function missingKey(schema: StrictObject, value: Record<string, unknown>): string | null {
  for (const [key, entry] of Object.entries(schema.entries)) {
    if (!OPTIONAL_TYPES.has(entry.type) && !Object.hasOwn(value, key)) return key;
  }
  return null;
}

const hasUnknownKey = (schema: StrictObject, value: Record<string, unknown>) => Object.keys(value).some((key) => !Object.hasOwn(schema.entries, key));

/** True when `value` has every required key of `schema` and no other key. */
export function keySetMatches(schema: StrictObject, value: Record<string, unknown>): boolean {
  return missingKey(schema, value) === null && !hasUnknownKey(schema, value);
}

function typeMessage(issue: v.BaseIssue<unknown>, where: string): string {
  const key = issue.path?.[0]?.key;
  const name = `${where}${typeof key === "string" ? key : ""}`;
  switch (issue.type) {
    case "safe_integer":
      return `${name} must be a safe integer`;
    case "non_empty":
      return `${name} must not be empty`;
    default:
      return `${name} has the wrong type`;
  }
}

/**
 * `where` prefixes key names in messages (`""` for the envelope, `"params."` for params);
 * `container` names the object in the unknown-key message.
 */
export function checkObject<S extends StrictObject>(
  schema: S,
  value: Record<string, unknown>,
  where: string,
  container: string,
): CheckResult<v.InferOutput<S>> {
  const missing = missingKey(schema, value);
  if (missing !== null) return { ok: false, message: `missing key ${where}${missing}` };
  if (hasUnknownKey(schema, value)) return { ok: false, message: `unknown key in ${container}` };
  const parsed = v.safeParse(schema, value);
  if (!parsed.success) return { ok: false, message: typeMessage(parsed.issues[0], where) };
  return { ok: true, value: parsed.output };
}
