/**
 * The common shape of the nine Agent tools (docs/mcp-tools.md#agent-tools): schema → the tool's MCP-side
 * checks → exactly one Bridge RPC (more only when the call asks the human a form, docs/elicitation.md),
 * whose answer the Bridge client has checked against the method's result schema → audit
 * fields (`schema_version: 1`, `correlation_id`, byte counts; never prompts or messages).
 */
import * as v from "valibot";
import type { Method, ParamsInput } from "../../../shared/bridge-protocol/methods.ts";
import type { Result } from "../../../shared/bridge-protocol/results.ts";
import { ServerFsError } from "../../../shared/errors.ts";
import { LIMITS } from "../../../shared/limits.ts";
import type { McpDeps } from "../deps.ts";
import { textParam } from "../params.ts";
import { type Annotations, defineTool, type ObjectSchema, type ToolCall, type ToolDef } from "../tool.ts";

/**
 * One Bridge RPC; rejects with the mapped ServerFsError (docs/mcp-tools.md#bridge-calls). The params
 * are typed by the method's schema in METHOD_PARAMS, the one the Bridge checks them against, and the
 * answer by its schema in METHOD_RESULTS, the one the client checks it against.
 */
export type BridgeCaller = <M extends Method>(method: M, params: ParamsInput<M>, opts: { signal: AbortSignal; extraTimeoutMs?: number }) => Promise<Result<M>>;

export interface AgentDeps extends McpDeps {
  bridge: BridgeCaller;
}

export const agentAnnotations = (readOnly: boolean, destructive: boolean, idempotent: boolean): Annotations => ({
  readOnlyHint: readOnly,
  destructiveHint: destructive,
  idempotentHint: idempotent,
  openWorldHint: !readOnly,
});

export const AGENT_READ = agentAnnotations(true, false, true);

/** docs/mcp-tools.md#audit-log: every Agent `tool_call` record, whatever its outcome. */
export const AGENT_AUDIT = { schema_version: 1 } as const;

export const taskIdParam = () => textParam("The task's id, as submit_agent_task returned it.");

/** The schema of correlation_id / idempotency_key; `opaqueValue` (opaque-value.ts) checks what the schema cannot. */
export const opaqueTextParam = (about: string) =>
  v.optional(textParam(`${about} At most ${LIMITS.max_opaque_bytes} UTF-8 bytes, no control characters; "" is the same as absent.`));

/** Validates the Bridge's answer against the tool's output shape; NaN and Infinity never parse from JSON. */
export function expectShape<T extends v.GenericSchema>(schema: T, value: unknown): v.InferOutput<T> {
  const parsed = v.safeParse(schema, value);
  if (!parsed.success) throw new ServerFsError("AGENT_BRIDGE_PROTOCOL_ERROR", "the Bridge's answer has an unexpected shape");
  return parsed.output;
}

/** The methods a tool forwards to as they are: each answers the task's `correlation_id`, which the audit records. */
export type ProxyMethod = { [M in Method]: Result<M> extends { correlation_id: string | null } ? M : never }[Method];

/** A tool that forwards to one Bridge method: the declaration of a ToolDef, without its own handler. */
export interface ProxyToolSpec<I extends ObjectSchema, M extends ProxyMethod>
  extends Pick<ToolDef<I>, "name" | "title" | "description" | "annotations" | "input" | "output" | "bulk"> {
  method: M;
  params(args: v.InferOutput<I>): ParamsInput<M>;
  /** Audit fields from the arguments and the answer. */
  audit?(args: v.InferOutput<I>, result: Result<M>, call: ToolCall): void;
  /**
   * What the call does with the Bridge's answer before it answers itself (the elicitation of a
   * pending request, docs/elicitation.md); its result replaces the answer.
   */
  settle?(args: v.InferOutput<I>, answer: Result<M>, call: ToolCall): Promise<Result<M>>;
  /** Reshape the answer (e.g. strip native ids) into the tool's `output` before returning it. */
  present?(result: Result<M>): Record<string, unknown>;
  extraTimeoutMs?(args: v.InferOutput<I>): number;
}

/** A tool that is exactly one RPC after its schema (every Agent tool but submit and list). */
export function proxyTool<I extends ObjectSchema, M extends ProxyMethod>(deps: AgentDeps, spec: ProxyToolSpec<I, M>): ToolDef {
  return defineTool({
    name: spec.name,
    title: spec.title,
    description: spec.description,
    annotations: spec.annotations,
    input: spec.input,
    output: spec.output,
    ...(spec.bulk ? { bulk: spec.bulk } : {}),
    unexpected: "AGENT_BRIDGE_ERROR",
    auditFields: AGENT_AUDIT,
    async run(args, call) {
      const a = args as Record<string, unknown>;
      if (typeof a["task_id"] === "string") call.audit["task_id"] = a["task_id"];
      const answer = await deps.bridge(spec.method, spec.params(args), {
        signal: call.signal,
        extraTimeoutMs: spec.extraTimeoutMs?.(args) ?? 0,
      });
      const result = spec.settle ? await spec.settle(args, answer, call) : answer;
      call.audit["correlation_id"] = result.correlation_id;
      spec.audit?.(args, result, call);
      return spec.present ? spec.present(result) : result;
    },
  });
}
