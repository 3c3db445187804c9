/**
 * A pending request as a form (docs/elicitation.md): the approval or question form of a task's
 * pending request (what a form is: `form-kit.ts`), and whether a task's request is still open.
 */
import { approvalForm } from "./approval-form.ts";
import type { PendingForm, PendingRequest, Task } from "./form-kit.ts";
import { questionForm } from "./question-form.ts";

/** `pending` is a task's `pending_request` as get_agent_task shows it. */
export function formFor(taskId: string, pending: PendingRequest): PendingForm {
  return pending.kind === "question" ? questionForm(taskId, pending.request_id, pending.payload) : approvalForm(taskId, pending.request_id, pending.payload);
}

/** The pending request of a task as task.get answers it, if it is still open. */
export function openRequest(task: Task): PendingRequest | null {
  const pending = task.pending_request;
  return pending?.status === "pending" ? pending : null;
}
