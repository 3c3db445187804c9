/**
 * Asking the human within a 2026-07-28 call (docs/elicitation.md#protocol-revisions), where the server
 * cannot send a request of its own: the call answers an `InputRequiredResult` carrying the pending
 * request's form (keyed by its `request_id`) and a signed `requestState` (`request-state.ts`), and the
 * client retries the same call with the human's reply in `inputResponses` and the state echoed.
 *
 * On the retry the state is checked first (the key, the tool, the task, the expiry) and then the
 * request it names must still be the task's pending one; either failing refuses the call
 * (`REQUEST_STATE_INVALID`, JSON-RPC -32602) and decides nothing. The reply then goes to the Bridge as
 * a 2025 form's would (`settleReply`); one that lost the race to another answer is the Bridge's
 * refusal (`REQUEST_STALE`, `REQUEST_ALREADY_RESOLVED`) as the tool's error. A decline, a cancel or
 * no reply decides nothing, and the request is not asked again in that call. Everything the retry
 * needs travels with it, so any `serverfs mcp` sharing the key answers it, also after a restart.
 */
import { inputRequired } from "@modelcontextprotocol/server";
import { ServerFsError } from "../../../../shared/errors.ts";
import { CallRefused, InputNeeded, type ToolCall } from "../../tool.ts";
import type { AgentDeps } from "../agent-tool.ts";
import type { Task } from "./form-kit.ts";
import { inputRequestsOf, settleReply } from "./input-requests.ts";
import { openRequest } from "./pending-form.ts";
import { expiryFor, invalidState, mintState, verifyState } from "./request-state.ts";
import { StateKeyUnavailable } from "./state-key.ts";

/**
 * Whether this 2026-07-28 call may ask about this task: its client takes forms, and it is the
 * connection that submitted the task, or there is no connection (stateless HTTP: any caller naming it,
 * or under OAuth, once the task is read, only the identity that submitted it: `submittedBy`).
 */
function mayAskByRoundTrip(call: ToolCall, taskId: string): boolean {
  return call.rounds?.mayAsk === true && (call.session.stateless || call.session.submitted.has(taskId));
}

/**
 * A stateless call with an OAuth identity is asked only about a task that identity submitted (the
 * task records its submitter, docs/task-model.md): another token's holder may still read the task and
 * answer with respond_agent_approval, but is not handed the human's form.
 */
function submittedBy(call: ToolCall, task: Task): boolean {
  if (call.identity === null) return true;
  const by = task.submitter;
  return by != null && by.sub === call.identity.sub && by.client_id === call.identity.clientId;
}

/** Whether `roundTrip` has anything to do for this call: a retry to settle, or a form it may ask. */
export function roundTripDue(call: ToolCall, taskId: string): boolean {
  const rounds = call.rounds;
  return rounds !== null && (rounds.state !== undefined || rounds.responses !== undefined || mayAskByRoundTrip(call, taskId));
}

/**
 * Settles a retry's reply, if the call is one, then asks the task's pending request, if any is left
 * to ask: throws InputNeeded (the InputRequiredResult to answer) or CallRefused. `task` is the task as
 * task.get last answered it (fetched when absent). Returns the task as it stands, and how many
 * requests the reply resolved.
 */
export async function roundTrip(deps: AgentDeps, call: ToolCall, taskId: string, task?: Task): Promise<{ task: Task; settled: number }> {
  const rounds = call.rounds!;
  const stateDir = deps.config.bridge.state_dir;
  const tool = String(call.audit["tool"]);
  const get = () => deps.bridge("task.get", { task_id: taskId }, { signal: call.signal });
  let current = task ?? (await get());
  let settled = 0;
  let answered: string | null = null;
  if (rounds.state !== undefined || rounds.responses !== undefined) {
    if (rounds.state === undefined) throw new CallRefused(invalidState("the retry carries inputResponses without their requestState"));
    const claim = await verifyState(stateDir, rounds.state, rounds.ctx, { tool, taskId }).catch((e: unknown) => {
      throw e instanceof ServerFsError ? new CallRefused(e) : e;
    });
    const pending = openRequest(current);
    if (pending?.request_id !== claim.request_id) throw new CallRefused(invalidState("the request it answers is no longer pending"));
    answered = pending.request_id;
    const { outcome, lost } = await settleReply(deps, call.signal, taskId, pending, rounds.responses?.[pending.request_id]);
    if (lost) throw lost;
    if (outcome === "resolved") {
      settled++;
      current = await get();
    }
  }
  const pending = openRequest(current);
  if (!pending || pending.request_id === answered || !mayAskByRoundTrip(call, taskId) || !submittedBy(call, current)) return { task: current, settled };
  let requestState: string;
  try {
    requestState = await mintState(stateDir, { v: 1, tool, task_id: taskId, request_id: pending.request_id, exp: expiryFor(pending.expires_at) }, rounds.ctx);
  } catch (e) {
    if (!(e instanceof StateKeyUnavailable)) throw e;
    // without a key nothing could verify the answer: the poll-based tools stay the way in
    deps.audit.warn("request_state_key_unavailable", { reason: e.message });
    return { task: current, settled };
  }
  throw new InputNeeded(inputRequired({ inputRequests: inputRequestsOf(taskId, current), requestState }));
}
