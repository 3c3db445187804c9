/**
 * Canonical JSON (docs/task-model.md#conventions) and SHA-256, the two halves of every hash the Bridge publishes
 * (manifest, policy hash, idempotency fingerprint) and of the guard file's content.
 *
 * Offers:
 * - `canonicalJson(value)`: object keys sorted ascending at every depth (UTF-16 code-unit order, what
 *   `Array.prototype.sort` does), no whitespace, strings escaped as `JSON.stringify` escapes them.
 *   Only strings, safe integers, booleans, null, arrays and plain objects are accepted; anything else
 *   (NaN, Infinity, fractions, undefined, bigint, functions, class instances, cycles) throws
 *   `CanonicalJsonError`, because a value that would be silently altered cannot be hashed honestly.
 * - `sha256Hex(data)`: lowercase hex SHA-256 of the UTF-8 bytes of a string, or of raw bytes.
 *
 * Pure functions, no state: usable from any thread.
 */
import { createHash } from "node:crypto";

export class CanonicalJsonError extends Error {
  override readonly name = "CanonicalJsonError";
}

export function canonicalJson(value: unknown): string {
  return encode(value, new Set());
}

function encode(value: unknown, ancestors: Set<object>): string {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isSafeInteger(value)) throw new CanonicalJsonError("only safe integers are allowed");
      // -0 and 0 are the same integer; JSON.stringify writes both as "0".
      return JSON.stringify(value);
    case "object":
      if (value === null) return "null";
      return encodeContainer(value, ancestors);
    default:
      throw new CanonicalJsonError(`a ${typeof value} value is not allowed`);
  }
}

function encodeContainer(value: object, ancestors: Set<object>): string {
  if (ancestors.has(value)) throw new CanonicalJsonError("a cyclic value is not allowed");
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      const items: string[] = [];
      // index loop, not map: map skips holes, which must be refused like undefined
      for (let i = 0; i < value.length; i++) items.push(encode(value[i], ancestors));
      return `[${items.join(",")}]`;
    }
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) throw new CanonicalJsonError("only plain objects are allowed");
    const record = value as Record<string, unknown>;
    const members = Object.keys(record)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${encode(record[k], ancestors)}`);
    return `{${members.join(",")}}`;
  } finally {
    ancestors.delete(value);
  }
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}
