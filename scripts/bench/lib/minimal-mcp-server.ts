/**
 * The cold-start floor of the benchmark (docs/performance.md): the smallest MCP server the SDK makes
 * (the v2 line, the one ServerFS's server is on),
 * its `McpServer` with one tool over stdio. `scripts/bench/fs.ts` compiles it with the flags of
 * ServerFS's build line into its temp dir in the same run as ServerFS, so both binaries come from the
 * same Bun, built the same way; what ServerFS takes beyond this to answer `initialize` is its own start.
 */
import { McpServer } from "@modelcontextprotocol/server";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";

const server = new McpServer({ name: "minimal", version: "1.0.0" });
server.registerTool("ping", { description: "Answers pong." }, () => ({ content: [{ type: "text", text: "pong" }] }));
await server.connect(new StdioServerTransport());
