/**
 * Incremental newline-delimited reading of a provider's stream (docs/runtimes.md#process-model).
 *
 * Offers:
 * - `PROVIDER_LINE_CAP`: the fixed 64 MiB per-line cap (an 8 MiB result escaped in JSON fits).
 * - `readLines(stream, cap?)`: an async generator of the stream's lines, strictly UTF-8 decoded, empty
 *   lines skipped, a final unterminated line included. An oversized or non-UTF-8 line throws
 *   `ServerFsError("AGENT_PROVIDER_ERROR")` after every earlier line was yielded. When the generator
 *   ends early (error or the consumer stops), the stream is cancelled, so a provider still writing gets
 *   a broken pipe instead of blocking forever.
 */
import { ServerFsError } from "../../shared/errors.ts";
import { decodeStrict } from "../../shared/utf8.ts";

export const PROVIDER_LINE_CAP = 64 * 1024 * 1024;

const NEWLINE = 0x0a;

function decodeLine(parts: Uint8Array[]): string {
  const bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  const text = decodeStrict(bytes);
  if (text === null) throw new ServerFsError("AGENT_PROVIDER_ERROR", "provider sent a line that is not valid UTF-8");
  return text.endsWith("\r") ? text.slice(0, -1) : text;
}

const tooLong = (): ServerFsError => new ServerFsError("AGENT_PROVIDER_ERROR", "provider sent a line over the line limit");

export async function* readLines(stream: ReadableStream<Uint8Array>, cap: number = PROVIDER_LINE_CAP): AsyncGenerator<string> {
  const reader = stream.getReader();
  // the unterminated tail of the line being read, in arrival order
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      let start = 0;
      for (let nl = value.indexOf(NEWLINE); nl >= 0; nl = value.indexOf(NEWLINE, start)) {
        if (pendingBytes + nl - start > cap) throw tooLong();
        pending.push(value.subarray(start, nl));
        const line = decodeLine(pending);
        pending = [];
        pendingBytes = 0;
        start = nl + 1;
        if (line !== "") yield line;
      }
      const rest = value.length - start;
      if (rest > 0) {
        if (pendingBytes + rest > cap) throw tooLong();
        pending.push(value.slice(start));
        pendingBytes += rest;
      }
    }
    if (pendingBytes > 0) {
      const line = decodeLine(pending);
      if (line !== "") yield line;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
