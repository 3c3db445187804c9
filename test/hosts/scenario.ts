/**
 * The one conversation every host in the host tier carries (docs/hosts.md "Tested hosts"): the model
 * calls each filesystem tool once, makes two calls that must fail with `CODE: message`, edits with the
 * `expected_revision` an earlier result returned, and runs an Agent task on the `fake` runtime to the
 * end and reads its spooled result back. The steps are wire-neutral; each host's mock turns them into
 * its own tool-call format. Arguments that depend on an earlier answer are computed from the results
 * the host returned to the model so far, so nothing here knows a revision or task id in advance.
 */

import { HOST_INLINE_CHUNK_BYTES } from "../../src/main/mcp/agent/read-agent-task-result.ts";
import { type BridgeEnv, type BridgeProcess, bridgeEnv, startBridgeProcess } from "../helpers/bridge.ts";
import { startStdio } from "../helpers/mcp-client.ts";

/** What the host showed the model for one call: the tool's text and whether the host marked it an error. */
export interface SeenResult {
  text: string;
  isError: boolean;
}

export interface ScenarioCall {
  /** A label for assertions (a tool can be called more than once). */
  label: string;
  tool: string;
  /** The arguments, from the results seen so far (in call order, labelled). */
  args(seen: Map<string, SeenResult>): Record<string, unknown>;
  /** Asked again until it returns false: a model polling (the call is repeated with the same label). */
  again?(last: SeenResult): boolean;
}

/** The task id submit_agent_task showed the model, from the tool results a host sent it (any mock's). */
export function submittedTaskId(results: readonly { text: string }[]): string {
  for (const { text } of results) {
    const id = /"task_id":"(agt_[0-9a-f]{24})"/.exec(text)?.[1];
    if (id) return id;
  }
  throw new Error("the model never saw a task id");
}

/** 280 000 bytes of final response, more than a task keeps (max_final_response_bytes), so it is spooled. */
export const SPOOLED_UNIT = "host-tier-✓-";
export const SPOOLED_UNITS = 20_000;
/** The chunk size read_agent_task_result's description promises stays inline (Claude Code inlines up to about 45 KB). */
export const RESULT_CHUNK = HOST_INLINE_CHUNK_BYTES;

const json = (seen: Map<string, SeenResult>, label: string): Record<string, unknown> => {
  const r = seen.get(label);
  if (r === undefined) throw new Error(`the model never saw the result of ${label}`);
  return JSON.parse(r.text) as Record<string, unknown>;
};

const fixed = (args: Record<string, unknown>) => (): Record<string, unknown> => args;

/** An edit of the note, with the revision create_text_file returned. */
const edit = (label: string, oldText: string, newText: string): ScenarioCall => ({
  label,
  tool: "edit_text_file",
  args: (seen) => ({
    workdir: "repo",
    path: "made/note.txt",
    expected_revision: json(seen, "create_text_file")["revision"],
    edits: [{ old_text: oldText, new_text: newText }],
  }),
});

const TERMINAL = new Set(["succeeded", "failed", "cancelled", "interrupted"]);

export const SCENARIO: ScenarioCall[] = [
  { label: "list_workdirs", tool: "list_workdirs", args: fixed({}) },
  { label: "list_directory", tool: "list_directory", args: fixed({ workdir: "repo", path: "" }) },
  { label: "stat_file", tool: "stat_file", args: fixed({ workdir: "repo", path: "README.md" }) },
  { label: "read_text_file", tool: "read_text_file", args: fixed({ workdir: "repo", path: "README.md" }) },
  { label: "find_files", tool: "find_files", args: fixed({ workdir: "repo", pattern: "*.md" }) },
  { label: "search_text", tool: "search_text", args: fixed({ workdir: "repo", query: "demo" }) },
  { label: "read_missing", tool: "read_text_file", args: fixed({ workdir: "repo", path: "no-such-file.txt" }) },
  { label: "create_directory", tool: "create_directory", args: fixed({ workdir: "repo", path: "made" }) },
  { label: "create_text_file", tool: "create_text_file", args: fixed({ workdir: "repo", path: "made/note.txt", content: "first line\n" }) },
  edit("edit_text_file", "first", "edited"),
  // the revision the file had before the edit: the server must refuse it
  edit("edit_stale", "edited", "lost"),
  {
    label: "delete_file",
    tool: "delete_file",
    args: (seen) => ({ workdir: "repo", path: "made/note.txt", expected_revision: json(seen, "edit_text_file")["revision"] }),
  },
  { label: "stat_directory", tool: "stat_file", args: fixed({ workdir: "repo", path: "made" }) },
  {
    label: "delete_directory",
    tool: "delete_directory",
    args: (seen) => ({ workdir: "repo", path: "made", expected_revision: json(seen, "stat_directory")["revision"] }),
  },
  { label: "list_agent_runtimes", tool: "list_agent_runtimes", args: fixed({}) },
  {
    label: "submit_agent_task",
    tool: "submit_agent_task",
    args: fixed({ runtime: "fake", workdir: "repo", profile: "review", prompt: `repeat:${SPOOLED_UNITS}:${SPOOLED_UNIT}` }),
  },
  {
    label: "get_agent_task",
    tool: "get_agent_task",
    args: (seen) => ({ task_id: json(seen, "submit_agent_task")["task_id"] }),
    // the status as the model reads it, also from a host's shortened preview of a long result
    again: (last) => !last.isError && !TERMINAL.has(/"status":"([a-z_]+)"/.exec(last.text)?.[1] ?? ""),
  },
  {
    label: "read_agent_task_result",
    tool: "read_agent_task_result",
    args: (seen) => ({ task_id: json(seen, "submit_agent_task")["task_id"], max_bytes: RESULT_CHUNK }),
  },
];

/** A tool as the server lists it. */
export interface ListedTool {
  name: string;
  inputSchema: unknown;
}

/**
 * A real `serverfs bridge` on a fresh BridgeEnv for a host to carry the scenario against, and the tools
 * a `serverfs mcp` of that config lists when asked directly: what the host must show the model.
 */
export async function startScenarioServer(): Promise<{ env: BridgeEnv; bridge: BridgeProcess; listed: ListedTool[] }> {
  const env = bridgeEnv();
  const bridge = await startBridgeProcess(env);
  const direct = await startStdio(env.configPath);
  const listed = (await direct.client.listTools()).tools as ListedTool[];
  await direct.close();
  return { env, bridge, listed };
}

/** The results a host showed the model, by the label of the call each answers (the calls in `labels` order). */
export function seenByLabel(labels: string[], results: SeenResult[]): Map<string, SeenResult> {
  const seen = new Map<string, SeenResult>();
  for (const [i, r] of results.entries()) seen.set(labels[i]!, r);
  return seen;
}

/**
 * The scenario as a host mock's script entries (the caller adds what comes before and after): each call
 * is computed from what `resultsOf` reads of the request the mock answers, turned into the host's wire
 * format by `step`, and its label pushed to `labels` when it is made.
 */
export function scenarioScript<Request, Step>(
  labels: string[],
  resultsOf: (request: Request) => SeenResult[],
  step: (tool: string, args: Record<string, unknown>) => Step,
): (((request: Request) => Step) | { poll: (request: Request) => Step | null })[] {
  return SCENARIO.map((c) => {
    const make = (request: Request) => {
      labels.push(c.label);
      return step(c.tool, c.args(seenByLabel(labels, resultsOf(request))));
    };
    const again = c.again;
    if (!again) return make;
    let asked = false;
    return {
      poll(request: Request) {
        if (asked && !again(resultsOf(request).at(-1)!)) return null;
        asked = true;
        return make(request);
      },
    };
  });
}

/** The filesystem tools a default config lists (the binary tools are off unless configured). */
export { FILESYSTEM_TOOLS } from "../helpers/tool-names.ts";

export const FINAL_WORDS = "host tier conversation complete";
