/**
 * Where a successful run's final text goes (docs/task-model.md#results): inline in the task row,
 * spooled to a file (spool.ts), or refused as too large, measured in UTF-8 bytes as the thresholds
 * are. Offers:
 * - `classifyResult(utf8)`: inline (with its text and SHA-256) | spool (with its preview) | too_large;
 * - `resultPreview(utf8)`: the first `result_preview_bytes` (limits.ts), cut back to the last complete character.
 */
import { sha256Hex } from "./canonical-json.ts";
import { LIMITS } from "./limits.ts";
import { byteLength, safePrefixLength } from "./utf8.ts";

const decoder = new TextDecoder();

/**
 * Where a result goes (docs/task-model.md#results). An inline one is decoded and hashed where it is
 * classified (at most 256 KiB); a spooled one keeps only its preview there, and the spool worker hashes
 * it as it writes, so the main thread never walks 8 MiB.
 */
export type ResultClass =
  | { storage: "inline"; size_bytes: number; text: string; sha256: string }
  | { storage: "spool"; size_bytes: number; preview: string }
  | { storage: "too_large"; size_bytes: number };

/** `utf8` is valid UTF-8 (an encoded string), measured in bytes as the thresholds are. */
export function classifyResult(utf8: Uint8Array): ResultClass {
  const size = utf8.length;
  if (size > LIMITS.max_spooled_result_bytes) return { storage: "too_large", size_bytes: size };
  if (size <= LIMITS.max_final_response_bytes) {
    const text = decoder.decode(utf8);
    if (byteLength(JSON.stringify(text)) <= LIMITS.max_inline_result_json_bytes) return { storage: "inline", size_bytes: size, text, sha256: sha256Hex(utf8) };
  }
  return { storage: "spool", size_bytes: size, preview: resultPreview(utf8) };
}

/** The first `result_preview_bytes` of a result, cut back to the last complete character. */
export function resultPreview(utf8: Uint8Array): string {
  return decoder.decode(utf8.subarray(0, safePrefixLength(utf8, LIMITS.result_preview_bytes)));
}
