/**
 * A tool is one valibot input schema, one output schema, four annotation hints and a handler.
 * The JSON Schemas clients see are generated from the same valibot schemas that validate calls,
 * so the declared contract and the enforced one cannot drift apart.
 */

import { type InputRequiredResult, ProtocolErrorCode } from "@modelcontextprotocol/server";
import { toJsonSchema } from "@valibot/to-json-schema";
import * as v from "valibot";
import type { AuditFields } from "../../shared/audit.ts";
import type { ErrorCode, ServerFsError } from "../../shared/errors.ts";
import type { Ask, ClientSession, RoundTrip } from "./client-session.ts";
import type { Identity } from "./oauth/identity.ts";
import type { Scope } from "./oauth/scopes.ts";

export interface Annotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export const READ_ONLY: Annotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

/**
 * One call as the handler sees it: the audit record it fills in, the call's end signal, its MCP
 * session, the asker of a form question within this call on a 2025-era connection (null when the
 * client cannot be asked), and on a 2026-07-28 one what its client sent for a round trip (null on 2025).
 */
export interface ToolCall {
  audit: AuditFields;
  signal: AbortSignal;
  session: ClientSession;
  ask: Ask | null;
  rounds: RoundTrip | null;
  /** Whom the OAuth token of the request names (docs/mcp-tools.md#oauth); null over stdio or a static token. */
  identity: Identity | null;
}

/**
 * A 2026-07-28 call that needs its client's input before it can answer (docs/elicitation.md): thrown
 * by the tool, answered as this InputRequiredResult, and the call is retried with the input.
 */
export class InputNeeded extends Error {
  override readonly name = "InputNeeded";
  constructor(readonly result: InputRequiredResult) {
    super("input required");
  }
}

/**
 * A call refused as a request rather than failed as a tool (a requestState that fails its checks):
 * thrown by the tool, answered as JSON-RPC -32602 with the error's `CODE: message`.
 */
export class CallRefused extends Error {
  override readonly name = "CallRefused";
  readonly code = ProtocolErrorCode.InvalidParams;
  constructor(readonly error: ServerFsError) {
    super(error.toText());
  }
}

export type ContentBlock = Record<string, unknown> & { type: string };

/** A result that carries content blocks beyond the JSON text block (only download_binary_file). */
export class WithContent {
  constructor(
    readonly structured: Record<string, unknown>,
    readonly extra: ContentBlock[],
  ) {}
}

export type ObjectSchema = v.StrictObjectSchema<v.ObjectEntries, undefined>;

export interface ToolDef<I extends ObjectSchema = ObjectSchema> {
  name: string;
  title: string;
  description: string;
  annotations: Annotations;
  input: I;
  output: v.GenericSchema;
  /** Code for an unexpected internal failure (docs/mcp-tools.md#results-and-errors). */
  unexpected: ErrorCode;
  /**
   * The result fields that can be large, sent after all the others in this order, so a host that
   * shows only the start of a long result still shows offsets, counts, status and revisions
   * (docs/mcp-tools.md#results-and-errors).
   */
  bulk?: readonly string[];
  /** Fields every `tool_call` record of this tool carries, a schema failure's included (docs/mcp-tools.md#audit-log). */
  auditFields?: AuditFields;
  /**
   * Set on the one tool a client may also call as an MCP task (docs/mcp-tasks.md): tools/list shows it
   * as `execution.taskSupport`; absent means the MCP default, "forbidden". Such a tool's result names
   * the Bridge task it created (`task_id`), which becomes the MCP task.
   */
  taskSupport?: "optional";
  /** The OAuth scope a call needs, when its read-only hint does not say it (the Agent tools); oauth/scopes.ts. */
  scope?: Scope;
  run(args: v.InferOutput<I>, call: ToolCall): Promise<Record<string, unknown> | WithContent> | Record<string, unknown> | WithContent;
}

export function defineTool<I extends ObjectSchema>(def: ToolDef<I>): ToolDef {
  return def as unknown as ToolDef;
}

/** `record` with its `bulk` keys moved to the end, in that order; the other keys keep theirs. */
export function bulkLast<T extends Record<string, unknown>>(record: T, bulk: readonly string[]): T {
  const out: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(record)) if (!bulk.includes(k)) out[k] = val;
  for (const k of bulk) if (k in record) out[k] = record[k];
  return out as T;
}

export function jsonSchemaOf(schema: v.GenericSchema): Record<string, unknown> {
  const json = toJsonSchema(schema, { errorMode: "ignore" }) as Record<string, unknown>;
  delete json["$schema"];
  if (json["type"] === "object" && !Array.isArray(json["required"])) json["required"] = [];
  return json;
}

const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** An INVALID_ARGUMENT message naming the parameter, never echoing the value. */
export function describeArgumentIssue(issue: v.BaseIssue<unknown>): string {
  const raw = v.getDotPath(issue) ?? "";
  const name = raw.split(".").every((p) => PARAM_NAME.test(p) || /^\d+$/.test(p)) ? raw : "(parameter)";
  if (issue.expected === "never") return `unknown parameter ${name}`;
  if (issue.type.endsWith("object") && issue.input === undefined) return `missing required parameter ${name}`;
  switch (issue.type) {
    case "integer":
      return `${name} must be an integer`;
    case "min_value":
    case "max_value":
      return `${name} is out of range (${issue.expected})`;
    case "min_length":
    case "non_empty":
      return `${name} must not be empty`;
    case "picklist":
      return `${name} must be one of ${issue.expected}`;
    default:
      return `${name} is invalid (expected ${issue.expected ?? "another value"})`;
  }
}

/** An optional parameter given as null is the same as absent (docs/mcp-tools.md#parameters). */
export function dropNulls(args: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(args ?? {})) if (val !== null) out[k] = val;
  return out;
}
