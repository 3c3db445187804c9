/**
 * One reply to a pending request's form on its way to the Bridge — a 2026-07-28 retry's or a tasks/update's
 * `inputResponses` entry, a 2025 elicitation result (docs/elicitation.md, docs/mcp-tasks.md#the-2026-07-28-extension)
 * — against a scripted Bridge: the form's reader makes the same call respond_agent_approval would, an
 * answer that lost the race to another (REQUEST_STALE, …) is "stale" and never an error, content that
 * answers no form or that the Bridge finds invalid is "refused", a decline or no answer decides nothing,
 * any other Bridge failure is thrown, and each is one agent_elicitation_answered record.
 * The race cannot be staged deterministically end to end: the request is read pending an instant
 * before the Bridge refuses the answer.
 */
import { describe, expect, test } from "bun:test";
import type { BridgeCaller } from "../../src/main/mcp/agent/agent-tool.ts";
import { settleReply } from "../../src/main/mcp/agent/elicitation/input-requests.ts";
import type { AuditLog } from "../../src/shared/audit.ts";
import { ServerFsError } from "../../src/shared/errors.ts";

const TASK = `agt_${"1".repeat(24)}`;
const REQ = `req_${"2".repeat(24)}`;
const pending = {
  request_id: REQ,
  task_id: TASK,
  kind: "approval",
  status: "pending",
  payload: { category: "command", summary: "Run a command", command: "make" },
  created_at: "2026-01-01T00:00:00.000Z",
  expires_at: null,
  resolved_at: null,
  resolution: null,
} as const;

/** A Bridge that records each call and then answers `outcome` (an error to throw, or a result). */
function bridge(outcome: Error | Record<string, unknown>) {
  const calls: { method: string; params: unknown }[] = [];
  const records: Record<string, unknown>[] = [];
  const audit = { info: (event: string, fields: Record<string, unknown>) => records.push({ event, ...fields }) } as unknown as AuditLog;
  const call = async (method: string, params: unknown) => {
    calls.push({ method, params });
    if (outcome instanceof Error) throw outcome;
    return outcome;
  };
  return { calls, records, deps: { bridge: call as BridgeCaller, audit } };
}
const signal = new AbortController().signal;
const accept = (decision: string) => ({ action: "accept", content: { decision } });

describe("settleReply", () => {
  test("an accepted decision is the respond_agent_approval call: resolved", async () => {
    const b = bridge({ task_id: TASK, request_id: REQ, status: "resolved" });
    expect(await settleReply(b.deps, signal, TASK, pending, accept("approve_once"))).toEqual({ outcome: "resolved", lost: null });
    expect(b.calls).toEqual([{ method: "task.approval.respond", params: { task_id: TASK, request_id: REQ, decision: "approve_once" } }]);
    expect(b.records).toEqual([
      {
        event: "agent_elicitation_answered",
        task_id: TASK,
        request_id: REQ,
        kind: "approval",
        action: "accept",
        decision: "approve_once",
        outcome: "resolved",
      },
    ]);
  });

  for (const code of ["REQUEST_STALE", "REQUEST_ALREADY_RESOLVED", "REQUEST_NOT_FOUND", "AGENT_TASK_NOT_FOUND"] as const) {
    test(`an answer that lost the race (${code}) is stale, not an error`, async () => {
      const lost = new ServerFsError(code, "the request is no longer pending");
      const b = bridge(lost);
      expect(await settleReply(b.deps, signal, TASK, pending, accept("deny"))).toEqual({ outcome: "stale", lost });
      expect(b.records[0]).toMatchObject({ decision: "deny", outcome: "stale" });
    });
  }

  test("content that answers no form never reaches the Bridge; one the Bridge finds invalid is refused", async () => {
    const none = bridge({});
    expect(await settleReply(none.deps, signal, TASK, pending, accept("approve_forever"))).toEqual({ outcome: "refused", lost: null });
    expect(none.calls).toEqual([]);
    const invalid = bridge(new ServerFsError("INVALID_APPROVAL_DECISION", "not offered"));
    expect(await settleReply(invalid.deps, signal, TASK, pending, accept("approve_session"))).toEqual({ outcome: "refused", lost: null });
    expect(invalid.records[0]).toMatchObject({ decision: "approve_session", outcome: "refused" });
  });

  test("a decline, a cancel or no reply decides nothing; a reply that is no elicitation result is refused", async () => {
    const b = bridge({});
    expect(await settleReply(b.deps, signal, TASK, pending, { action: "decline" })).toEqual({ outcome: "pending", lost: null });
    expect(await settleReply(b.deps, signal, TASK, pending, { action: "cancel" })).toEqual({ outcome: "pending", lost: null });
    expect(await settleReply(b.deps, signal, TASK, pending, undefined)).toEqual({ outcome: "pending", lost: null });
    expect(await settleReply(b.deps, signal, TASK, pending, { action: "approve" })).toEqual({ outcome: "refused", lost: null });
    expect(b.calls).toEqual([]);
    expect(b.records.map((r) => r["action"])).toEqual(["decline", "cancel", "missing", "invalid"]);
  });

  test("any other Bridge failure is thrown", async () => {
    const b = bridge(new ServerFsError("AGENT_BRIDGE_UNAVAILABLE", "the Bridge is not running"));
    await expect(settleReply(b.deps, signal, TASK, pending, accept("approve_once"))).rejects.toMatchObject({ code: "AGENT_BRIDGE_UNAVAILABLE" });
  });
});
