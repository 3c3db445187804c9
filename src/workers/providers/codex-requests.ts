/**
 * Codex's server→client requests as the Bridge's human-in-the-loop requests (docs/runtimes.md#codex
 * step 6): the approval or question payload a request becomes, and the reply each resolution gives.
 *
 * Offers `planServerRequest(method, params, knownChanges)` → `ServerRequestPlan`:
 * - `item/commandExecution/requestApproval` → a `command` approval; `availableDecisions` mapped,
 *   always with `deny` (default approve_once, deny, cancel_task); `outside_sandbox` when approving it
 *   lets the command run without Codex's sandbox;
 * - `item/fileChange/requestApproval` → a `file_change` approval with the paths of the item's changes;
 * - `item/permissions/requestApproval` → a `provider_permission` approval with one requested permission
 *   per profile part (`network`, `file_system`), answered with exactly the granted subset;
 * - `item/tool/requestUserInput` → a question (option ids = labels); a secret question is refused;
 * - `mcpServer/elicitation/request` that is Codex's approval of an MCP tool call (`_meta.codex_approval_kind`
 *   `mcp_tool_call`) → an `mcp_tool` approval with the server, the tool and its arguments (bounded);
 * - anything else (an MCP server's own elicitation among them) → refused with -32601.
 * An approval whose human never answers gets `onNoAnswer` (a decline: the run goes on).
 */
import * as v from "valibot";
import { byteLength, cutUtf8 } from "../../shared/utf8.ts";
import { METHOD_NOT_FOUND } from "./codex-rpc.ts";
import type { ApprovalPayload, ApprovalResolution, Decision, ProposedFileChange, QuestionPayload, QuestionResolution } from "./types.ts";

type Reply = Record<string, unknown>;

export type ServerRequestPlan =
  | { kind: "approval"; payload: ApprovalPayload; answer(r: ApprovalResolution): Reply; onNoAnswer: Reply }
  | { kind: "question"; payload: QuestionPayload; answer(r: QuestionResolution): Reply }
  | { kind: "refuse"; code: number; message: string };

const TO_CODEX: Record<Decision, string> = {
  approve_once: "accept",
  approve_session: "acceptForSession",
  deny: "decline",
  cancel_task: "cancel",
};
const FROM_CODEX = new Map(Object.entries(TO_CODEX).map(([ours, theirs]) => [theirs, ours as Decision]));
const DEFAULT_DECISIONS: Decision[] = ["approve_once", "deny", "cancel_task"];
const ORDER: Decision[] = ["approve_once", "approve_session", "deny", "cancel_task"];

const text = v.optional(v.nullable(v.string()));

const CommandParams = v.looseObject({
  itemId: v.string(),
  command: text,
  cwd: text,
  reason: text,
  commandActions: v.optional(v.nullable(v.array(v.looseObject({ command: v.optional(v.nullable(v.string())) })))),
  // structured entries (policy amendments) have no ServerFS decision and are left out
  availableDecisions: v.optional(v.nullable(v.array(v.unknown()))),
  kind: v.optional(v.nullable(v.string())),
  additionalPermissions: v.optional(v.unknown()),
  networkApprovalContext: v.optional(v.unknown()),
});
const FileChangeParams = v.looseObject({ itemId: v.string(), reason: text });
const PermissionsParams = v.looseObject({
  itemId: v.string(),
  cwd: text,
  reason: text,
  permissions: v.looseObject({
    network: v.optional(v.nullable(v.record(v.string(), v.unknown()))),
    fileSystem: v.optional(v.nullable(v.record(v.string(), v.unknown()))),
  }),
});
const UserInputParams = v.looseObject({
  itemId: v.string(),
  questions: v.array(
    v.looseObject({
      id: v.string(),
      header: v.optional(v.string(), ""),
      question: v.string(),
      isOther: v.optional(v.boolean(), false),
      isSecret: v.optional(v.boolean(), false),
      options: v.optional(v.nullable(v.array(v.looseObject({ label: v.string(), description: v.optional(v.string()) })))),
    }),
  ),
});

/** Codex's approval of an MCP tool call, sent as an MCP elicitation whose `_meta` names the call. */
const McpToolApprovalParams = v.looseObject({
  serverName: v.string(),
  _meta: v.looseObject({
    codex_approval_kind: v.literal("mcp_tool_call"),
    tool_name: v.string(),
    tool_params: v.optional(v.nullable(v.record(v.string(), v.unknown()))),
    persist: v.optional(v.nullable(v.array(v.unknown()))),
  }),
});

const decisionReply = (r: ApprovalResolution): Reply => ({ decision: TO_CODEX[r.decision] });
const DECLINE: Reply = { decision: "decline" };

/**
 * Codex's `availableDecisions` in our terms, always with `deny`: Codex 0.171.0 lists only accept and
 * cancel for many commands, yet accepts `decline` for every one (the item ends `declined` and the turn
 * goes on), and refusing a command must never require killing the task (docs/agent-requests.md).
 */
function mapDecisions(offered: unknown[] | null | undefined): Decision[] {
  if (!offered) return DEFAULT_DECISIONS;
  const mapped = new Set<Decision>(["deny"]);
  for (const d of offered) {
    const ours = typeof d === "string" ? FROM_CODEX.get(d) : undefined;
    if (ours) mapped.add(ours);
  }
  return mapped.size > 1 ? ORDER.filter((d) => mapped.has(d)) : DEFAULT_DECISIONS;
}

/** Optional strings of a payload, present only when the provider gave them. */
function strings(fields: Record<string, string | null | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(fields).filter((e): e is [string, string] => typeof e[1] === "string" && e[1] !== ""));
}

/**
 * The command as the model asked for it: Codex shows it wrapped (`/bin/bash -lc '<cmd>'`) and parses
 * it into `commandActions`; a single action's own text is the model's command, else the full line.
 */
function modelCommand(command: string | null | undefined, actions: { command?: string | null }[] | null | undefined): string | null | undefined {
  const only = actions?.length === 1 ? actions[0]!.command : undefined;
  return typeof only === "string" && only !== "" ? only : command;
}

/** A tool's arguments as a human is shown them: whole up to 16 KiB, else each string cut to 1 KiB, else none. */
export const TOOL_INPUT_BYTES = 16_384;
const TOOL_INPUT_STRING_BYTES = 1024;

function cutStrings(value: unknown): unknown {
  if (typeof value === "string") return cutUtf8(value, TOOL_INPUT_STRING_BYTES).text;
  if (Array.isArray(value)) return value.map(cutStrings);
  if (typeof value === "object" && value !== null) return Object.fromEntries(Object.entries(value).map(([k, x]) => [k, cutStrings(x)]));
  return value;
}

function boundedToolInput(input: Record<string, unknown>): Pick<ApprovalPayload, "tool_input" | "tool_input_truncated"> {
  if (byteLength(JSON.stringify(input)) <= TOOL_INPUT_BYTES) return { tool_input: input };
  const cut = cutStrings(input) as Record<string, unknown>;
  return { tool_input: byteLength(JSON.stringify(cut)) <= TOOL_INPUT_BYTES ? cut : {}, tool_input_truncated: true };
}

/** Our decision as the MCP elicitation result Codex reads: `persist: "session"` remembers the tool for the thread. */
function mcpToolReply(r: ApprovalResolution): Reply {
  switch (r.decision) {
    case "approve_once":
      return { action: "accept", content: {} };
    case "approve_session":
      return { action: "accept", content: {}, _meta: { persist: "session" } };
    case "deny":
      return { action: "decline" };
    case "cancel_task":
      return { action: "cancel" };
  }
}

/**
 * Whether Codex runs the command without its sandbox once it is approved: 0.171.0 does so for a plain
 * command approval, whether the model asked to escalate or the `untrusted` policy asked about a
 * command (both proven by a write outside the workdir); a request for additional permissions or for
 * network access runs inside the sandbox with them, and input to a running terminal starts nothing.
 */
function runsUnsandboxed(p: { kind?: string | null; additionalPermissions?: unknown; networkApprovalContext?: unknown }): boolean {
  const plain = p.kind === undefined || p.kind === null || p.kind === "command";
  return plain && p.additionalPermissions == null && p.networkApprovalContext == null;
}

const refuse = (code: number, message: string): ServerRequestPlan => ({ kind: "refuse", code, message });
const INVALID_PARAMS = -32602;

/** The codex profile key behind each permission id. */
const PERMISSION_KEYS = { network: "network", file_system: "fileSystem" } as const;

export function planServerRequest(method: string, params: Record<string, unknown>, knownChanges: (itemId: string) => ProposedFileChange[]): ServerRequestPlan {
  switch (method) {
    case "item/commandExecution/requestApproval": {
      const p = v.safeParse(CommandParams, params);
      if (!p.success) return refuse(INVALID_PARAMS, "invalid approval request");
      const { command, cwd, reason, availableDecisions, commandActions } = p.output;
      return {
        kind: "approval",
        payload: {
          category: "command",
          title: "Run a command",
          available_decisions: mapDecisions(availableDecisions),
          ...(runsUnsandboxed(p.output) ? { outside_sandbox: true } : {}),
          ...strings({ command: modelCommand(command, commandActions), command_display: command, reason, relative_cwd: cwd }),
        },
        answer: decisionReply,
        onNoAnswer: DECLINE,
      };
    }
    case "item/fileChange/requestApproval": {
      const p = v.safeParse(FileChangeParams, params);
      if (!p.success) return refuse(INVALID_PARAMS, "invalid approval request");
      return {
        kind: "approval",
        payload: {
          category: "file_change",
          title: "Apply file changes",
          available_decisions: [],
          file_changes: knownChanges(p.output.itemId),
          ...strings({ reason: p.output.reason }),
        },
        answer: decisionReply,
        onNoAnswer: DECLINE,
      };
    }
    case "item/permissions/requestApproval": {
      const p = v.safeParse(PermissionsParams, params);
      if (!p.success) return refuse(INVALID_PARAMS, "invalid approval request");
      const { permissions, cwd, reason } = p.output;
      const requested = (Object.keys(PERMISSION_KEYS) as (keyof typeof PERMISSION_KEYS)[]).flatMap((id) => {
        const details = permissions[PERMISSION_KEYS[id]];
        return details ? [{ permission_id: id, kind: id, details }] : [];
      });
      return {
        kind: "approval",
        payload: {
          category: "provider_permission",
          title: "Grant additional permissions",
          available_decisions: [],
          requested_permissions: requested,
          ...strings({ reason, relative_cwd: cwd }),
        },
        answer(r) {
          const granted: Reply = {};
          if (r.decision === "approve_once" || r.decision === "approve_session") {
            for (const entry of requested) {
              if (r.granted_permission_ids.includes(entry.permission_id))
                granted[PERMISSION_KEYS[entry.permission_id as keyof typeof PERMISSION_KEYS]] = entry.details;
            }
          }
          return { permissions: granted, scope: r.decision === "approve_session" ? "session" : "turn" };
        },
        onNoAnswer: { permissions: {}, scope: "turn" },
      };
    }
    case "item/tool/requestUserInput": {
      const p = v.safeParse(UserInputParams, params);
      if (!p.success) return refuse(INVALID_PARAMS, "invalid question request");
      if (p.output.questions.some((q) => q.isSecret)) return refuse(INVALID_PARAMS, "secret questions are not supported");
      return {
        kind: "question",
        payload: {
          questions: p.output.questions.map((q) => {
            const options = (q.options ?? []).map((o) => ({
              option_id: o.label,
              label: o.label,
              ...(o.description ? { description: o.description } : {}),
            }));
            return {
              question_id: q.id,
              prompt: q.header ? `${q.header}: ${q.question}` : q.question,
              options,
              multi_select: false,
              allow_free_text: q.isOther || options.length === 0,
            };
          }),
        },
        answer: (r) => ({
          answers: Object.fromEntries(r.answers.map((a) => [a.question_id, { answers: [...a.selected_option_ids, ...(a.text ? [a.text] : [])] }])),
        }),
      };
    }
    case "mcpServer/elicitation/request": {
      // an MCP server's own form or URL elicitation asks for input no ServerFS human is shown
      const p = v.safeParse(McpToolApprovalParams, params);
      if (!p.success) return refuse(METHOD_NOT_FOUND, "MCP elicitations other than tool-call approvals are not supported by this client");
      const { serverName, _meta: meta } = p.output;
      // "always" would write the grant into the user's Codex config: never offered
      const session = meta.persist?.includes("session") ?? false;
      return {
        kind: "approval",
        payload: {
          category: "mcp_tool",
          title: "Use an MCP tool",
          available_decisions: session ? ["approve_once", "approve_session", "deny", "cancel_task"] : DEFAULT_DECISIONS,
          server: serverName,
          tool: meta.tool_name,
          ...boundedToolInput(meta.tool_params ?? {}),
        },
        answer: mcpToolReply,
        onNoAnswer: { action: "decline" },
      };
    }
    default:
      return refuse(METHOD_NOT_FOUND, "method not supported by this client");
  }
}
