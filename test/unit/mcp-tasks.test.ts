/**
 * The parts of MCP Tasks (docs/mcp-tasks.md) that need no process: the status mapping, progress
 * messages, and the elicitation seam of tasks/result against a scripted Bridge (the e2e suite,
 * test/e2e/mcp-tasks.test.ts, runs the rest against real processes; no elicitation is connected yet).
 */
import { describe, expect, test } from "bun:test";
import type { ServerContext } from "@modelcontextprotocol/server";
import type { BridgeCaller } from "../../src/main/mcp/agent/agent-tool.ts";
import { BridgeTaskStore } from "../../src/main/mcp/tasks/bridge-task-store.ts";
import { type BridgeTask, isTerminalTask, POLL_INTERVAL_MS, toMcpTask } from "../../src/main/mcp/tasks/mcp-task.ts";
import { progressMessage } from "../../src/main/mcp/tasks/progress-message.ts";
import { awaitTaskResult } from "../../src/main/mcp/tasks/task-result.ts";
import { AuditLog } from "../../src/shared/audit.ts";

const TTL = 168 * 3_600_000;

function task(status: BridgeTask["status"], failure: { code: string; message: string } | null = null): BridgeTask {
  return {
    task_id: `agt_${"a".repeat(24)}`,
    runtime: "fake",
    profile: "review",
    workdir_alias: "repo",
    workdir_slot: 1,
    relative_cwd: "",
    status,
    created_at: "2026-01-01T00:00:00.000Z",
    updated_at: "2026-01-01T00:00:05.000Z",
    started_at: null,
    completed_at: null,
    deadline_at: null,
    continue_from_task_id: null,
    correlation_id: null,
    idempotency_key: null,
    final_response: null,
    final_response_truncated: false,
    result: { storage: "inline", size_bytes: null, sha256: null, retrievable: false },
    manifest: null,
    manifest_sha256: null,
    error_code: failure?.code ?? null,
    error_message: failure?.message ?? null,
    pending_request_id: null,
    pending_request: null,
  };
}

describe("a Bridge task as an MCP task (docs/mcp-tasks.md#status-mapping)", () => {
  test.each([
    ["queued", "working"],
    ["starting", "working"],
    ["running", "working"],
    ["waiting_for_approval", "input_required"],
    ["waiting_for_question", "input_required"],
    ["succeeded", "completed"],
    ["failed", "failed"],
    ["interrupted", "failed"],
    ["cancelled", "cancelled"],
  ] as const)("%s is %s", (bridgeStatus, mcpStatus) => {
    expect(toMcpTask(task(bridgeStatus), TTL).status).toBe(mcpStatus);
    expect(isTerminalTask(task(bridgeStatus))).toBe(["completed", "failed", "cancelled"].includes(mcpStatus));
  });

  test("the id is the task id; times, ttl and poll interval come along; the message is the ServerFS status", () => {
    expect(toMcpTask(task("running"), TTL)).toEqual({
      taskId: `agt_${"a".repeat(24)}`,
      status: "working",
      statusMessage: "running",
      createdAt: "2026-01-01T00:00:00.000Z",
      lastUpdatedAt: "2026-01-01T00:00:05.000Z",
      ttl: TTL,
      pollInterval: POLL_INTERVAL_MS,
    });
  });

  test("a failure's message carries its code and message", () => {
    const failed = toMcpTask(task("interrupted", { code: "BRIDGE_RESTARTED", message: "the Bridge restarted" }), TTL);
    expect(failed.statusMessage).toBe("interrupted: BRIDGE_RESTARTED: the Bridge restarted");
  });
});

describe("progress messages", () => {
  test("the event type and the most telling payload field, on one line", () => {
    expect(progressMessage("approval.requested", { request_id: "req_1", summary: "Run a command", title: "make" })).toBe("approval.requested: Run a command");
    expect(progressMessage("agent.message", { text: "line one\n  line two" })).toBe("agent.message: line one line two");
    expect(progressMessage("task.cancelled", {})).toBe("task.cancelled");
    expect(progressMessage("task.failed", { error_code: "AGENT_PROVIDER_ERROR" })).toBe("task.failed: AGENT_PROVIDER_ERROR");
  });

  test("a long summary is cut to 120 characters, never inside one", () => {
    const message = progressMessage("agent.message", { text: "é".repeat(500) });
    expect(message).toBe(`agent.message: ${"é".repeat(120)}…`);
  });
});

describe("tasks/result hands each pending request to the elicitation seam once", () => {
  const TASK_ID = `agt_${"a".repeat(24)}`;
  const REQUEST = {
    request_id: `req_${"b".repeat(24)}`,
    task_id: TASK_ID,
    kind: "approval" as const,
    status: "pending" as const,
    payload: {},
    created_at: "2026-01-01T00:00:01.000Z",
    expires_at: null,
    resolved_at: null,
    resolution: null,
  };
  const waiting = { ...task("waiting_for_approval"), pending_request_id: REQUEST.request_id, pending_request: REQUEST };

  test("the hook sees the request, the wait goes on when it leaves it pending, and the answer carries the related task", async () => {
    // task.get answers these in turn; task.events has one event, then none
    const reads: BridgeTask[] = [waiting, waiting, waiting, task("succeeded")];
    const calls: string[] = [];
    let eventsRead = 0;
    const bridge = (async (method: string) => {
      calls.push(method);
      if (method === "task.get") return reads.shift()!;
      if (method !== "task.events") throw new Error(`unexpected ${method}`);
      const events =
        eventsRead++ === 0
          ? [
              {
                schema_version: 1,
                event_id: 7,
                task_id: TASK_ID,
                correlation_id: null,
                event_type: "approval.requested",
                created_at: "2026-01-01T00:00:01.000Z",
                payload: { summary: "Run make" },
              },
            ]
          : [];
      return { correlation_id: null, events, next_after_event_id: 7 };
    }) as unknown as BridgeCaller;
    const store = new BridgeTaskStore({
      bridge,
      finalResult: async (id) => ({ content: [], structuredContent: { task_id: id, status: "succeeded" } }),
      ttlMs: 1,
      audit: new AuditLog("error"),
      signal: new AbortController().signal,
    });
    const handed: string[] = [];
    const notes: unknown[] = [];
    const ctx = {
      mcpReq: {
        signal: new AbortController().signal,
        _meta: { progressToken: "p1" },
        notify: async (n: unknown) => {
          notes.push(n);
        },
      },
    } as unknown as ServerContext;

    const result = await awaitTaskResult(TASK_ID, ctx, {
      store,
      bridge,
      signal: new AbortController().signal,
      onPendingRequest: async (t) => {
        handed.push(t.pending_request.request_id);
      },
    });
    expect(handed).toEqual([REQUEST.request_id]);
    // read, hook, read again, two bounded waits (the second one empty), then the end
    expect(calls).toEqual(["task.get", "task.get", "task.events", "task.get", "task.events", "task.get"]);
    expect(notes).toEqual([{ method: "notifications/progress", params: { progressToken: "p1", progress: 1, message: "approval.requested: Run make" } }]);
    expect(result).toEqual({
      content: [],
      structuredContent: { task_id: TASK_ID, status: "succeeded" },
      _meta: { "io.modelcontextprotocol/related-task": { taskId: TASK_ID } },
    });
  });
});
