/**
 * The upload payload checks of docs/mcp-tools.md#upload_binary_file, steps 7.2–7.4, in order: the encoded length
 * before any decoding (so an oversized payload costs no decode), strict RFC 4648 base64 (standard
 * alphabet, length a multiple of 4, `=` only as one or two trailing pad characters, no whitespace),
 * then the decoded length.
 */
import { ServerFsError } from "../../../shared/errors.ts";

/** The alphabet with padding only at the end; the multiple-of-4 rule is checked separately. */
const STRICT_BASE64 = /^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** `tooLarge` is the call's BINARY_PAYLOAD_TOO_LARGE (its message depends on what set `maxBytes`). */
export function decodeStrictBase64(data: string, maxBytes: number, where: string, tooLarge: () => ServerFsError): Buffer {
  if (data.length > 4 * Math.ceil(maxBytes / 3)) throw tooLarge();
  if (data.length % 4 !== 0 || !STRICT_BASE64.test(data)) {
    throw new ServerFsError("INVALID_BASE64", `${where} data_base64 is not strict RFC 4648 base64`);
  }
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  if ((data.length / 4) * 3 - padding > maxBytes) throw tooLarge();
  return Buffer.from(data, "base64");
}
