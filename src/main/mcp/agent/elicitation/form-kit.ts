/**
 * What every form of a pending request is made of (docs/elicitation.md): the form the human sees and
 * the Bridge call an accepted form becomes, and the readers of a request's payload the approval and
 * question forms share. Kept apart from `pending-form.ts`, which picks the form by the request's kind,
 * so that the forms do not import the module that imports them.
 */
import type { ParamsInput } from "../../../../shared/bridge-protocol/methods.ts";
import type { Result } from "../../../../shared/bridge-protocol/results.ts";
import type { ElicitForm } from "../../client-session.ts";

export type Json = Record<string, unknown>;

/** A task as task.get answers it, and its pending request. */
export type Task = Result<"task.get">;
export type PendingRequest = NonNullable<Task["pending_request"]>;

export type Forward =
  | { method: "task.approval.respond"; params: ParamsInput<"task.approval.respond">; decision: string }
  | { method: "task.question.answer"; params: ParamsInput<"task.question.answer">; decision: "answered" };

export interface PendingForm {
  form: ElicitForm;
  /** The Bridge call for an accepted form; null when the content does not answer the form. */
  answer(content: Json): Forward | null;
}

export const text = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
export const list = (v: unknown): Json[] => (Array.isArray(v) ? (v as Json[]) : []);
