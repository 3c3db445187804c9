/** The `serverfs://{workdir}/{path}` resource template (mcp-surface.md §5.7). */
import type { McpDeps } from "./deps.ts";

export const RESOURCE_TEMPLATE = {
  uriTemplate: "serverfs://{workdir}/{path}",
  name: "workdir-file",
  title: "A text file in a workdir",
  description: "A UTF-8 text file of a workdir, read whole (one page at most).",
  mimeType: "text/plain",
};

export async function readResource(_deps: McpDeps, _uri: string): Promise<{ contents: unknown[] }> {
  throw Object.assign(new Error("READ_FAILED: resource reads are not wired yet"), { code: -32603 });
}
