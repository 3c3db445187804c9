/**
 * A pending request as a form (docs/elicitation.md): the form the human sees, and how an accepted
 * form's content becomes the same Bridge call respond_agent_approval / answer_agent_question make.
 */
import type { ParamsInput } from "../../../../shared/bridge-protocol/methods.ts";
import type { Result } from "../../../../shared/bridge-protocol/results.ts";
import type { ElicitForm } from "../../client-session.ts";
import { approvalForm } from "./approval-form.ts";
import { questionForm } from "./question-form.ts";

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

/** `pending` is a task's `pending_request` as get_agent_task shows it. */
export function formFor(taskId: string, pending: PendingRequest): PendingForm {
  return pending.kind === "question" ? questionForm(taskId, pending.request_id, pending.payload) : approvalForm(taskId, pending.request_id, pending.payload);
}

/** The pending request of a task as task.get answers it, if it is still open. */
export function openRequest(task: Task): PendingRequest | null {
  const pending = task.pending_request;
  return pending?.status === "pending" ? pending : null;
}

export const text = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
export const list = (v: unknown): Json[] => (Array.isArray(v) ? (v as Json[]) : []);
