import { describe, expect, test } from "bun:test";
import { type BridgeTask, isTerminalTask, POLL_INTERVAL_MS, toMcpTask } from "../../src/main/mcp/tasks/mcp-task.ts";
import { progressMessage } from "../../src/main/mcp/tasks/progress-message.ts";

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
    expect(progressMessage("approval.requested", { request_id: "req_1", summary: "Run a command", title: "make" })).toBe(
      "approval.requested: Run a command",
    );
    expect(progressMessage("agent.message", { text: "line one\n  line two" })).toBe("agent.message: line one line two");
    expect(progressMessage("task.cancelled", {})).toBe("task.cancelled");
    expect(progressMessage("task.failed", { error_code: "AGENT_PROVIDER_ERROR" })).toBe("task.failed: AGENT_PROVIDER_ERROR");
  });

  test("a long summary is cut to 120 characters, never inside one", () => {
    const message = progressMessage("agent.message", { text: "é".repeat(500) });
    expect(message).toBe(`agent.message: ${"é".repeat(120)}…`);
  });
});
