/**
 * Asking the human within a call of a 2025-era connection (docs/elicitation.md; a 2026-07-28 call asks
 * by round trip, `round-trip.ts`). `elicitPending` is the one way in, for get_agent_task and
 * read_agent_task_events here and for the MCP Tasks handlers (`tasks/result`):
 * while a task this session created has a pending approval or question, and the client can be
 * asked, it sends the request as a form on the call's own stream and forwards an accepted answer
 * through the same Bridge methods as respond_agent_approval / answer_agent_question. It answers the
 * task as it stands after the replies.
 *
 * A declined or cancelled form (or one that failed or timed out) leaves the request pending for the
 * poll-based tools, and is not asked again within the same call (`asked`); a later call asks it
 * again. A form whose request stops being pending meanwhile — answered elsewhere, expired, withdrawn
 * by the provider, its task ended — is withdrawn: the elicitation request is cancelled at the client
 * and the call goes on at once. An answer that lost that race is shown to nobody as an error either:
 * the call just answers the task's state.
 */
import type { ToolCall } from "../../tool.ts";
import type { AgentDeps } from "../agent-tool.ts";
import type { PendingRequest, Task } from "./form-kit.ts";
import { type Outcome, settleReply } from "./input-requests.ts";
import { formFor, openRequest } from "./pending-form.ts";
import { untilWithdrawn } from "./withdrawal.ts";

/** The reason the client is given for a withdrawn form's cancellation; it names nothing of the request. */
const WITHDRAWN = "the request is no longer pending";

/** A task asks one request at a time; this bounds the forms of one call (a runtime that asks again and again). */
const MAX_FORMS_PER_CALL = 16;

/** Whether this call may ask about this task: the client can be asked and this session created it. */
export function mayElicit(call: ToolCall, taskId: string): boolean {
  return call.ask !== null && call.session.submitted.has(taskId);
}

/**
 * `task` is the task as task.get last answered it (fetched when absent). Returns the task as it
 * stands after the forms, and how many of the forms' requests stopped being pending meanwhile (answered
 * through the form or elsewhere); with nothing to ask, `task` as given.
 */
export async function elicitPending(
  deps: AgentDeps,
  call: ToolCall,
  taskId: string,
  task?: Task,
  asked: Set<string> = new Set(),
): Promise<{ task: Task; settled: number }> {
  const get = () => deps.bridge("task.get", { task_id: taskId }, { signal: call.signal });
  let current = task ?? (await get());
  let settled = 0;
  if (!mayElicit(call, taskId)) return { task: current, settled };
  for (let forms = 0; forms < MAX_FORMS_PER_CALL; forms++) {
    const pending = openRequest(current);
    if (!pending || asked.has(pending.request_id)) break;
    asked.add(pending.request_id);
    const outcome = await askOne(deps, call, taskId, pending);
    if (outcome === "resolved" || outcome === "stale") settled++;
    current = await get();
  }
  return { task: current, settled };
}

async function askOne(deps: AgentDeps, call: ToolCall, taskId: string, pending: PendingRequest): Promise<Outcome> {
  const { form } = formFor(taskId, pending);
  const record = (action: string, outcome: Outcome) =>
    deps.audit.info("agent_elicitation_answered", { task_id: taskId, request_id: pending.request_id, kind: pending.kind, action, decision: null, outcome });

  // the form and the watch race: whichever ends first ends the other
  const formEnded = new AbortController();
  const withdraw = new AbortController();
  void untilWithdrawn(deps, taskId, pending.request_id, AbortSignal.any([call.signal, formEnded.signal])).then(
    () => {
      if (!formEnded.signal.aborted) withdraw.abort(WITHDRAWN);
    },
    () => {
      // the form ended first, or the Bridge could not be watched: the form stays until it is answered
    },
  );
  let reply: Awaited<ReturnType<NonNullable<ToolCall["ask"]>>>;
  try {
    reply = await call.ask!(form, withdraw.signal);
  } catch {
    if (withdraw.signal.aborted) {
      record("withdrawn", "stale");
      return "stale";
    }
    // the client failed the request, the form timed out, or the call ended: nothing was answered
    record("failed", "pending");
    return "pending";
  } finally {
    formEnded.abort();
  }
  // a reply that lost the race is shown to nobody as an error: the call answers the task's state
  return (await settleReply(deps, call.signal, taskId, pending, reply)).outcome;
}
