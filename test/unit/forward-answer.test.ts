/**
 * An accepted tasks/update answer on its way to the Bridge (docs/mcp-tasks.md#the-2026-07-28-extension),
 * against a scripted Bridge: the form's reader makes the same call respond_agent_approval would, an
 * answer that lost the race to another (REQUEST_STALE, …) is "stale" and never an error, content that
 * answers no form or that the Bridge finds invalid is "refused", and any other Bridge failure is thrown.
 * The race cannot be staged deterministically end to end: the request is read pending an instant
 * before the Bridge refuses the answer.
 */
import { describe, expect, test } from "bun:test";
import type { BridgeCaller } from "../../src/main/mcp/agent/agent-tool.ts";
import { formFor } from "../../src/main/mcp/agent/elicitation/pending-form.ts";
import { forwardAnswer } from "../../src/main/mcp/tasks/forward-answer.ts";
import { ServerFsError } from "../../src/shared/errors.ts";

const TASK = `agt_${"1".repeat(24)}`;
const REQ = `req_${"2".repeat(24)}`;
const approval = formFor(TASK, {
  request_id: REQ,
  task_id: TASK,
  kind: "approval",
  status: "pending",
  payload: { category: "command", summary: "Run a command", command: "make" },
  created_at: "2026-01-01T00:00:00.000Z",
  expires_at: null,
  resolved_at: null,
  resolution: null,
});

/** A Bridge that records each call and then answers `outcome` (an error to throw, or a result). */
function bridge(outcome: Error | Record<string, unknown>) {
  const calls: { method: string; params: unknown }[] = [];
  const call = async (method: string, params: unknown) => {
    calls.push({ method, params });
    if (outcome instanceof Error) throw outcome;
    return outcome;
  };
  return { calls, deps: { bridge: call as BridgeCaller } };
}
const signal = new AbortController().signal;

describe("forwardAnswer", () => {
  test("an accepted decision is the respond_agent_approval call: resolved", async () => {
    const b = bridge({ task_id: TASK, request_id: REQ, status: "resolved" });
    expect(await forwardAnswer(b.deps, approval.answer, { decision: "approve_once" }, signal)).toEqual({ outcome: "resolved", decision: "approve_once" });
    expect(b.calls).toEqual([{ method: "task.approval.respond", params: { task_id: TASK, request_id: REQ, decision: "approve_once" } }]);
  });

  for (const code of ["REQUEST_STALE", "REQUEST_ALREADY_RESOLVED", "REQUEST_NOT_FOUND", "AGENT_TASK_NOT_FOUND"] as const) {
    test(`an answer that lost the race (${code}) is stale, not an error`, async () => {
      const b = bridge(new ServerFsError(code, "the request is no longer pending"));
      expect(await forwardAnswer(b.deps, approval.answer, { decision: "deny" }, signal)).toEqual({ outcome: "stale", decision: "deny" });
    });
  }

  test("content that answers no form never reaches the Bridge; one the Bridge finds invalid is refused", async () => {
    const none = bridge({});
    expect(await forwardAnswer(none.deps, approval.answer, { decision: "approve_forever" }, signal)).toEqual({ outcome: "refused", decision: null });
    expect(none.calls).toEqual([]);
    const invalid = bridge(new ServerFsError("INVALID_APPROVAL_DECISION", "not offered"));
    expect(await forwardAnswer(invalid.deps, approval.answer, { decision: "approve_session" }, signal)).toEqual({
      outcome: "refused",
      decision: "approve_session",
    });
  });

  test("any other Bridge failure is thrown", async () => {
    const b = bridge(new ServerFsError("AGENT_BRIDGE_UNAVAILABLE", "the Bridge is not running"));
    await expect(forwardAnswer(b.deps, approval.answer, { decision: "approve_once" }, signal)).rejects.toMatchObject({ code: "AGENT_BRIDGE_UNAVAILABLE" });
  });
});
