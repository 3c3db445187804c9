/**
 * What the Codex host tests share (docs/hosts.md "Tested hosts"): the namespace Codex shows ServerFS's
 * tools in, what the model saw of each MCP call as the Responses mock received it, and one `codex exec`
 * turn.
 */
import type { MockRequest } from "../fixtures/mock-openai.ts";
import { CODE_PATTERN } from "../helpers/mcp-client.ts";
import { runToEnd } from "../helpers/process.ts";
import type { SeenResult } from "./scenario.ts";

export const NAMESPACE = "mcp__serverfs";
export const RUN_MS = 120_000;

export type Item = Record<string, unknown>;
export const inputOf = (request: MockRequest): Item[] => (Array.isArray(request.body["input"]) ? (request.body["input"] as Item[]) : []);

const WALL_TIME = /^Wall time: [0-9.]+ seconds\nOutput:\n?/;

/**
 * What the model saw of each MCP call, in order. Codex puts its wall time before a tool's text: in
 * the same string for a success, as a separate content item before the text for an error result. The
 * Responses wire has no error flag, so the model tells an error by that text's leading `CODE: `.
 */
export function toolResults(request: MockRequest): SeenResult[] {
  return inputOf(request)
    .filter((i) => i["type"] === "function_call_output")
    .map((i) => {
      const output = i["output"];
      if (typeof output === "string") return { text: output.replace(WALL_TIME, ""), isError: false };
      const texts = (output as { text?: string }[]).map((c) => c.text ?? "").filter((t) => !WALL_TIME.test(t));
      const text = texts.join("\n");
      return { text, isError: CODE_PATTERN.test(text) };
    });
}

/** One `codex exec` turn in `cwd`, with `env` added; its final message and what Codex wrote on stderr. */
export async function codexExec(bin: string, home: string, cwd: string, env: Record<string, string> = {}): Promise<{ final: string; stderr: string }> {
  const { stdout, stderr, code } = await runToEnd([bin, "exec", "--skip-git-repo-check", "use the serverfs tools"], {
    cwd,
    env: { CODEX_HOME: home, MOCK_API_KEY: "mock-key", ...env },
    killAfterMs: RUN_MS,
  });
  if (code !== 0) throw new Error(`codex exec exited ${code}: ${stderr.slice(-2000)}`);
  return { final: stdout.trim(), stderr };
}
