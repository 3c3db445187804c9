/**
 * The stream-json wire of `claude -p` (docs/runtimes.md#claude), as far as the adapter reads and writes
 * it: valibot schemas for the CLI's output lines (loose: the CLI adds fields between releases, and
 * only the named ones matter here) and builders for the lines the adapter sends.
 *
 * Offers: `ClaudeLineSchema` / `ClaudeLine` (system, assistant, user, result, control_request,
 * control_cancel_request, and the known informational types), the content-block guards
 * `isTextBlock`, `asToolUse` (which fills a missing input), `isToolResult`, `toolResultText`, `ToolRequest` (a
 * `can_use_tool` request) with `isToolRequest`, `HookCallback` (a `hook_callback` request) with `asHookCallback`,
 * `PermissionResponse`, `usageOf` (a result's per-model usage), and the builders `userLine`, `initializeLine`, `controlResponse`, `controlError`,
 * `interruptLine`.
 */
import * as v from "valibot";
import { TokenCount } from "./adapter-kit.ts";
import type { UsagePayload } from "./types.ts";

const TextBlock = v.looseObject({ type: v.literal("text"), text: v.string() });
const ToolUseBlock = v.looseObject({
  type: v.literal("tool_use"),
  id: v.string(),
  name: v.string(),
  input: v.optional(v.record(v.string(), v.unknown()), {}),
});
const ToolResultBlock = v.looseObject({
  type: v.literal("tool_result"),
  tool_use_id: v.string(),
  is_error: v.optional(v.nullable(v.boolean()), false),
  content: v.optional(v.unknown()),
});

/** The text of a tool result's content (a string, or text blocks). */
export function toolResultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((b): b is { text: string } => isTextBlock(b))
    .map((b) => b.text)
    .join("\n");
}

/** Content blocks are checked one by one: a block type the adapter does not know is skipped. */
const blocks = v.array(v.unknown());

export const isTextBlock = (b: unknown): b is v.InferOutput<typeof TextBlock> => v.is(TextBlock, b);
export const asToolUse = (b: unknown): v.InferOutput<typeof ToolUseBlock> | null => {
  const r = v.safeParse(ToolUseBlock, b);
  return r.success ? r.output : null;
};
export const isToolResult = (b: unknown): b is v.InferOutput<typeof ToolResultBlock> => v.is(ToolResultBlock, b);

const PermissionSuggestion = v.looseObject({ destination: v.optional(v.string()) });

const ToolRequestSchema = v.looseObject({
  subtype: v.literal("can_use_tool"),
  tool_name: v.string(),
  input: v.optional(v.record(v.string(), v.unknown()), {}),
  description: v.optional(v.string()),
  blocked_path: v.optional(v.string()),
  permission_suggestions: v.optional(v.array(PermissionSuggestion), []),
  tool_use_id: v.optional(v.string()),
});

/** A hook the adapter registered firing: the CLI's hook input, with the session's directory as `cwd`. */
const HookCallbackSchema = v.looseObject({
  subtype: v.literal("hook_callback"),
  callback_id: v.string(),
  input: v.looseObject({ cwd: v.optional(v.string()), tool_use_id: v.optional(v.string()) }),
});

export const ClaudeLineSchema = v.variant("type", [
  v.looseObject({ type: v.literal("system"), subtype: v.optional(v.string()), session_id: v.optional(v.string()) }),
  v.looseObject({
    type: v.literal("assistant"),
    message: v.looseObject({ content: blocks }),
  }),
  v.looseObject({
    type: v.literal("user"),
    message: v.looseObject({ content: v.union([v.string(), blocks]) }),
  }),
  v.looseObject({
    type: v.literal("result"),
    subtype: v.optional(v.string()),
    is_error: v.optional(v.boolean(), false),
    result: v.optional(v.string()),
    modelUsage: v.optional(v.record(v.string(), v.unknown()), {}),
  }),
  v.looseObject({
    type: v.literal("control_request"),
    request_id: v.string(),
    request: v.union([ToolRequestSchema, v.looseObject({ subtype: v.string() })]),
  }),
  v.looseObject({ type: v.literal("control_cancel_request"), request_id: v.string() }),
  v.looseObject({
    type: v.picklist(["control_response", "stream_event", "rate_limit_event", "keep_alive", "auth_status", "tool_progress"]),
  }),
]);

export type ClaudeLine = v.InferOutput<typeof ClaudeLineSchema>;

/** One model's entry of a result's `modelUsage`: its tokens, and what they cost by the CLI's price list. */
const ModelUsageSchema = v.looseObject({
  inputTokens: TokenCount,
  outputTokens: TokenCount,
  cacheReadInputTokens: TokenCount,
  cacheCreationInputTokens: TokenCount,
  thinkingTokens: TokenCount,
  costUSD: v.optional(v.nullable(v.pipe(v.number(), v.finite(), v.minValue(0))), null),
});

/**
 * A result's `modelUsage` as `task.usage` payloads, one per model. Claude counts cache reads and cache
 * writes apart from `inputTokens`; a payload's `input_tokens` holds all three (cached ones included, as
 * Codex counts them). An entry the CLI wrote in another shape is skipped.
 */
export function usageOf(modelUsage: Record<string, unknown>): UsagePayload[] {
  return Object.entries(modelUsage).flatMap(([model, raw]) => {
    const u = v.safeParse(ModelUsageSchema, raw);
    if (!u.success) return [];
    const o = u.output;
    return [
      {
        model,
        input_tokens: o.inputTokens + o.cacheReadInputTokens + o.cacheCreationInputTokens,
        cached_input_tokens: o.cacheReadInputTokens,
        output_tokens: o.outputTokens,
        reasoning_output_tokens: o.thinkingTokens,
        cost_usd: o.costUSD,
      },
    ];
  });
}
export type ToolRequest = v.InferOutput<typeof ToolRequestSchema>;

export const isToolRequest = (r: { subtype: string }): r is ToolRequest => v.is(ToolRequestSchema, r);

export type HookCallback = v.InferOutput<typeof HookCallbackSchema>;
export const asHookCallback = (r: { subtype: string }): HookCallback | null => {
  const parsed = v.safeParse(HookCallbackSchema, r);
  return parsed.success ? parsed.output : null;
};

/** A `can_use_tool` answer (the CLI's PermissionResult). */
export type PermissionResponse = PermissionAllow | PermissionDeny;
export interface PermissionAllow {
  behavior: "allow";
  updatedInput: Record<string, unknown>;
  updatedPermissions?: unknown[];
}
export interface PermissionDeny {
  behavior: "deny";
  message: string;
  interrupt?: boolean;
}

/** The task input: one user turn with the prompt as its content. */
export const userLine = (prompt: string): string =>
  JSON.stringify({ type: "user", message: { role: "user", content: prompt }, parent_tool_use_id: null, session_id: "" });

/** A hook callback's answer that leaves the call to the CLI's own flow (its permission prompt included). */
export type HookContinue = Record<string, never>;

/**
 * The session's first control request: registers hook callbacks, `{event: [{matcher, ids}]}`; the CLI
 * then sends a `hook_callback` request with one of the ids each time the hook fires.
 */
export const initializeLine = (requestId: string, hooks: Record<string, { matcher: string; hookCallbackIds: string[] }[]>): string =>
  JSON.stringify({ type: "control_request", request_id: requestId, request: { subtype: "initialize", hooks } });

export const controlResponse = (requestId: string, response: PermissionResponse | HookContinue): string =>
  JSON.stringify({ type: "control_response", response: { subtype: "success", request_id: requestId, response } });

/** Refuses a control request the adapter does not serve. */
export const controlError = (requestId: string, error: string): string =>
  JSON.stringify({ type: "control_response", response: { subtype: "error", request_id: requestId, error } });

export const interruptLine = (requestId: string): string =>
  JSON.stringify({ type: "control_request", request_id: requestId, request: { subtype: "interrupt" } });
