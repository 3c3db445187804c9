/**
 * The stdio transport (docs/mcp-tools.md#stdio). stdout carries protocol only. The SDK's transport
 * alone keeps running after stdin closes, so EOF, a broken stdout and SIGINT/SIGTERM all end the
 * process here at once: nothing pending may keep it alive, and no abandoned call answers.
 */
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
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

  const server = createMcpServer({ ...rt, signal: ending.signal });
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
  await server.connect(
    new StdioServerTransport(flow.input as unknown as NodeJS.ReadStream, flow.output as unknown as NodeJS.WriteStream, { maxBufferSize: maxLine }),
  );
}
