/**
 * A pending request as the input a client is asked for, and a client's reply as the Bridge's answer
 * (docs/elicitation.md), apart from how either travels: a 2025 `elicitation/create` request
 * (`elicit-pending.ts`), a 2026-07-28 `InputRequiredResult` and its retry (`round-trip.ts`), or an MCP
 * task's `inputRequests` and `tasks/update`.
 *
 * `inputRequestsOf` maps a task's open request to `{ <request_id>: <elicitation/create form> }`;
 * `settleReply` takes one reply to it (`{ action, content }`), forwards an accepted one through
 * `task.approval.respond` / `task.question.answer` and writes the `agent_elicitation_answered` record.
 */
import type { InputRequest } from "@modelcontextprotocol/server";
import * as v from "valibot";
import { ServerFsError } from "../../../../shared/errors.ts";
import type { AgentDeps } from "../agent-tool.ts";
import type { PendingRequest, Task } from "./form-kit.ts";
import { formFor, openRequest } from "./pending-form.ts";

/** The Bridge's answers to a reply that came too late (docs/bridge-rpc.md#taskapprovalrespond-and-taskquestionanswer). */
const LOST_RACE = new Set(["REQUEST_STALE", "REQUEST_ALREADY_RESOLVED", "REQUEST_NOT_FOUND", "AGENT_TASK_NOT_FOUND"]);

/** What became of one form: answered (`resolved`), too late (`stale`), not answered (`pending`) or not an answer (`refused`). */
export type Outcome = "resolved" | "stale" | "pending" | "refused";

/** The input request of a task's open request, keyed by its `request_id`; empty when nothing is open. */
export function inputRequestsOf(taskId: string, task: Task): Record<string, InputRequest> {
  const pending = openRequest(task);
  if (!pending) return {};
  return { [pending.request_id]: { method: "elicitation/create", params: { mode: "form", ...formFor(taskId, pending).form } } };
}

/** A reply as the client sends it (an ElicitResult); anything else answers nothing. */
const Reply = v.looseObject({ action: v.picklist(["accept", "decline", "cancel"]), content: v.optional(v.record(v.string(), v.unknown())) });

export interface Settled {
  outcome: Outcome;
  /** The Bridge's refusal when the reply lost the race to another answer, the request's end or the task's. */
  lost: ServerFsError | null;
}

/**
 * One reply to `pending`'s form: an accepted one that answers the form goes to the Bridge; a decline,
 * a cancel, or a reply that is none, decides nothing. Each writes one `agent_elicitation_answered`
 * record (never the reply's content).
 */
export async function settleReply(
  deps: Pick<AgentDeps, "bridge" | "audit">,
  signal: AbortSignal,
  taskId: string,
  pending: PendingRequest,
  reply: unknown,
): Promise<Settled> {
  const line = { task_id: taskId, request_id: pending.request_id, kind: pending.kind };
  const done = (action: string, decision: string | null, outcome: Outcome, lost: ServerFsError | null = null): Settled => {
    deps.audit.info("agent_elicitation_answered", { ...line, action, decision, outcome });
    return { outcome, lost };
  };
  if (reply === undefined) return done("missing", null, "pending");
  const parsed = v.safeParse(Reply, reply);
  if (!parsed.success) return done("invalid", null, "refused");
  if (parsed.output.action !== "accept") return done(parsed.output.action, null, "pending");
  const forward = formFor(taskId, pending).answer(parsed.output.content ?? {});
  if (!forward) return done("accept", null, "refused");
  try {
    await deps.bridge(forward.method, forward.params, { signal });
    return done("accept", forward.decision, "resolved");
  } catch (e) {
    if (!(e instanceof ServerFsError)) throw e;
    if (LOST_RACE.has(e.code)) return done("accept", forward.decision, "stale", e);
    if (e.code.startsWith("INVALID_")) return done("accept", forward.decision, "refused");
    throw e;
  }
}
