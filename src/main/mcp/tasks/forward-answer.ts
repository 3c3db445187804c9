/**
 * An accepted answer to a pending request, forwarded to the Bridge (docs/mcp-tasks.md#tasksupdate):
 * the form's `answer()` maps the content to the same Bridge call respond_agent_approval or
 * answer_agent_question makes, and a reply that came too late (the request answered elsewhere,
 * expired, withdrawn, its task ended) is "stale", never an error. It lives beside the 2026-07-28
 * tasks code for now; elicit-pending.ts classifies its own forms' answers the same way.
 */
import { ServerFsError } from "../../../shared/errors.ts";
import type { AgentDeps } from "../agent/agent-tool.ts";
import type { Json, PendingForm } from "../agent/elicitation/form-kit.ts";

/** The Bridge's answers to a reply that came too late (docs/bridge-rpc.md#taskapprovalrespond-and-taskquestionanswer). */
const LOST_RACE: ReadonlySet<string> = new Set(["REQUEST_STALE", "REQUEST_ALREADY_RESOLVED", "REQUEST_NOT_FOUND", "AGENT_TASK_NOT_FOUND"]);

export type ForwardOutcome = { outcome: "resolved" | "stale" | "refused"; decision: string | null };

/**
 * Forwards `content` through `answer`: "refused" when it does not answer the form (or the Bridge
 * finds it invalid), "stale" when the request is no longer pending. Any other Bridge failure throws.
 */
export async function forwardAnswer(
  deps: Pick<AgentDeps, "bridge">,
  answer: PendingForm["answer"],
  content: Json,
  signal: AbortSignal,
): Promise<ForwardOutcome> {
  const forward = answer(content);
  if (!forward) return { outcome: "refused", decision: null };
  try {
    await deps.bridge(forward.method, forward.params, { signal });
    return { outcome: "resolved", decision: forward.decision };
  } catch (e) {
    if (!(e instanceof ServerFsError)) throw e;
    if (LOST_RACE.has(e.code)) return { outcome: "stale", decision: forward.decision };
    if (e.code.startsWith("INVALID_")) return { outcome: "refused", decision: forward.decision };
    throw e;
  }
}
