/** What one tool call produced (server.ts `callTool`), as the task code needs it. */
import type { ServerFsError } from "../../../shared/errors.ts";

/** A tool call's answer: structured content and its text, or an error's text with isError (a type, so it is an MCP Result). */
export type ToolResult = {
  isError?: boolean;
  content: unknown[];
  structuredContent?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
};

/** The answer and, when the call failed, the error behind its text. */
export interface ToolOutcome {
  result: ToolResult;
  error: ServerFsError | null;
}
