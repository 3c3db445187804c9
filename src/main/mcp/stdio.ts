/**
 * The stdio transport (docs/mcp-tools.md#stdio). stdout carries protocol only. The SDK's transport
 * alone keeps running after stdin closes, so EOF, a broken stdout and SIGINT/SIGTERM all end the
 * process here at once: nothing pending may keep it alive, and no abandoned call answers.
 *
 * Which protocol era the connection speaks is `[server] protocol_revisions` (docs/protocol.md): with
 * 2025-11-25 alone, one server hand-wired to the transport, which answers a 2026-07-28
 * `server/discover` probe "method not found" so that the client falls back to `initialize`; with
 * 2026-07-28, the SDK's entry for both eras, which lets the opening exchange choose the era and pins
 * one server of that era for the connection.
 */
import { StdioServerTransport, serveStdio as serveEras } from "@modelcontextprotocol/server/stdio";
import { FATAL_BOUND_MS, installFatalHandlers } from "../fatal-errors.ts";
import { oversizedAnswer } from "./oversized-message.ts";
import { createMcpServer } from "./server.ts";
import { auditStartup, type McpRuntime } from "./startup.ts";
import { StdioFlow } from "./stdio-flow.ts";
import { incomingMessageLimit } from "./transfer-limit.ts";

export async function serveStdio(rt: McpRuntime): Promise<void> {
  const ending = new AbortController();
  const end = (code: number) => {
    ending.abort();
    process.exit(code);
  };
  process.stdin.on("end", () => end(0));
  process.stdin.on("close", () => end(0));
  process.stdout.on("error", () => end(0));
  process.on("SIGINT", () => end(0));
  process.on("SIGTERM", () => end(0));
  installFatalHandlers({ audit: rt.deps.audit, shutdown: () => ending.abort(), boundMs: FATAL_BOUND_MS });

  auditStartup(rt, "stdio");
  // Backpressure: requests wait while the client does not read our answers (stdio-flow.ts). Our
  // reader takes in any upload up to the configured limit, so one over the stdio limit is answered
  // BINARY_PAYLOAD_TOO_LARGE, and so is one longer still, read only in part (oversized-message.ts).
  // Neither ends the session.
  const maxLine = incomingMessageLimit(rt.deps.config);
  const flow = new StdioFlow(
    process.stdin,
    process.stdout,
    maxLine,
    () => end(0),
    (line) => {
      const answer = oversizedAnswer(line.head, line.bytes, maxLine);
      rt.deps.audit.warn("stdio_message_too_large", { bytes: line.bytes, limit: maxLine, answered: answer?.code ?? null });
      return answer?.message ?? null;
    },
  );
  const transport = new StdioServerTransport(flow.input as unknown as NodeJS.ReadStream, flow.output as unknown as NodeJS.WriteStream, {
    maxBufferSize: maxLine,
  });
  const revisions = rt.deps.config.server.protocol_revisions;
  if (!revisions.includes("2026-07-28")) {
    await createMcpServer({ ...rt, signal: ending.signal, era: "legacy" }).connect(transport);
    return;
  }
  serveEras(({ era }) => createMcpServer({ ...rt, signal: ending.signal, era }), {
    transport,
    legacy: revisions.includes("2025-11-25") ? "serve" : "reject",
  });
}
