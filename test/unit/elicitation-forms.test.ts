/**
 * The forms pending requests become (docs/elicitation.md): the message stays within its bound and
 * never shows a withheld diff, the decisions are the request's, and an answer maps back to exactly
 * the Bridge call respond_agent_approval / answer_agent_question would make.
 */
import { describe, expect, test } from "bun:test";
import { FORM_MESSAGE_BYTES } from "../../src/main/mcp/agent/elicitation/form-message.ts";
import { formFor } from "../../src/main/mcp/agent/elicitation/pending-form.ts";

const TASK = `agt_${"1".repeat(24)}`;
const REQ = `req_${"2".repeat(24)}`;
/** A pending request as task.get answers it. */
const pending = (kind: "approval" | "question", payload: Record<string, unknown>) => ({
  request_id: REQ,
  task_id: TASK,
  kind,
  status: "pending" as const,
  payload,
  created_at: "2026-01-01T00:00:00.000Z",
  expires_at: null,
  resolved_at: null,
  resolution: null,
});
const props = (f: ReturnType<typeof formFor>) => f.form.requestedSchema.properties as Record<string, Record<string, unknown>>;

describe("approval forms", () => {
  test("many large diffs: the message stays within its bound, says what was left out, kinds before diffs, withheld diffs never shown", () => {
    const files = Array.from({ length: 40 }, (_, i) => ({
      path: `src/f${i}.ts`,
      kind: i === 0 ? "delete" : "update",
      diff: i === 1 ? null : `--- a/src/f${i}.ts\n+++ b/src/f${i}.ts\n${"+line\n".repeat(500)}`,
      withheld: i === 1,
    }));
    const f = formFor(TASK, pending("approval", { category: "file_change", summary: "Apply file changes", file_changes: files }));
    const message = f.form.message;
    expect(Buffer.byteLength(message, "utf8")).toBeLessThanOrEqual(FORM_MESSAGE_BYTES);
    expect(message).toContain("delete src/f0.ts");
    expect(message).toContain("update src/f39.ts");
    expect(message).toContain("the diff of src/f1.ts is withheld");
    expect(message).toContain("get_agent_task has the whole request");
  });

  test("the offered decisions only; an answer outside them is not forwarded", () => {
    const f = formFor(TASK, pending("approval", { category: "command", command: "ls", available_decisions: ["approve_once", "deny"] }));
    expect(props(f)["decision"]!["enum"]).toEqual(["approve_once", "deny"]);
    expect(f.answer({ decision: "approve_session" })).toBeNull();
    expect(f.answer({ decision: "deny" })).toEqual({
      method: "task.approval.respond",
      decision: "deny",
      params: { task_id: TASK, request_id: REQ, decision: "deny" },
    });
  });

  test("Codex under untrusted offers approve_once, deny, cancel_task: the form names no other decision, nor a value that is none", () => {
    const f = formFor(
      TASK,
      pending("approval", { category: "command", command: "ls", available_decisions: ["cancel_task", "approve_once", "deny", "accept"] }),
    );
    const decision = props(f)["decision"]!;
    expect(decision["enum"]).toEqual(["approve_once", "deny", "cancel_task"]);
    expect(JSON.stringify(f.form)).not.toContain("approve_session");
    expect(JSON.stringify(f.form)).not.toContain("accept");
    expect(f.answer({ decision: "accept" })).toBeNull();
    // an empty list offers all four (docs/task-model.md#human-in-the-loop-requests)
    const all = formFor(TASK, pending("approval", { category: "file_change", available_decisions: [] }));
    expect(props(all)["decision"]!["enum"]).toEqual(["approve_once", "approve_session", "deny", "cancel_task"]);
    expect(String(props(all)["decision"]!["description"])).toContain("approve_session");
  });

  test("a permission request: one checkbox per permission; the unticked ones are not granted", () => {
    const f = formFor(
      TASK,
      pending("approval", {
        category: "provider_permission",
        requested_permissions: [
          { permission_id: "p-net", kind: "network", details: {} },
          { permission_id: "p-fs", kind: "file_system", details: { write: ["."] } },
        ],
      }),
    );
    expect(props(f)["grant_1"]!["type"]).toBe("boolean");
    const forward = f.answer({ decision: "approve_once", grant_1: true, grant_2: false });
    expect(forward?.params).toMatchObject({ granted_permission_ids: ["p-net"] });
  });

  test("a command that runs outside the sandbox says so; a sandboxed one does not", () => {
    const command = { category: "command", command: "echo x > /etc/x", relative_cwd: "." };
    expect(formFor(TASK, pending("approval", { ...command, outside_sandbox: true })).form.message).toContain("runs outside the sandbox");
    expect(formFor(TASK, pending("approval", command)).form.message).not.toContain("sandbox");
  });

  test("an MCP tool call shows its server, its tool and its input, and says when the input was cut", () => {
    const payload = { category: "mcp_tool", server: "notes", tool: "write_note", tool_input: { name: "n.txt" }, tool_input_truncated: true };
    const message = formFor(TASK, pending("approval", payload)).form.message;
    expect(message).toContain("MCP server: notes");
    expect(message).toContain("Tool: write_note");
    expect(message).toContain('Tool input (cut): {"name":"n.txt"}');
  });
});

describe("question forms", () => {
  const questions = [
    {
      question_id: "colour",
      prompt: "Which colour?",
      options: [
        { option_id: "r", label: "Red" },
        { option_id: "r2", label: "Red" },
        { option_id: "g", label: "Green" },
      ],
      multi_select: true,
      allow_free_text: false,
    },
    { question_id: "why", prompt: "Why?", options: [], multi_select: false, allow_free_text: true },
  ];
  const f = formFor(TASK, pending("question", { questions }));

  test("options as an enum of labels (a shared label gets its id), a list for multi_select; free text where allowed", () => {
    expect(props(f)["answer_1"]).toMatchObject({ type: "array", items: { type: "string", enum: ["Red [r]", "Red [r2]", "Green"] } });
    expect(props(f)["text_2"]!["type"]).toBe("string");
    expect(f.form.requestedSchema.required).toEqual(["answer_1", "text_2"]);
  });

  test("an answer maps labels back to option ids; an unknown label or a missing answer is not forwarded", () => {
    expect(f.answer({ answer_1: ["Red [r2]", "Green"], text_2: "because" })?.params).toEqual({
      task_id: TASK,
      request_id: REQ,
      answers: [
        { question_id: "colour", selected_option_ids: ["r2", "g"] },
        { question_id: "why", selected_option_ids: [], text: "because" },
      ],
    });
    expect(f.answer({ answer_1: ["Blue"], text_2: "x" })).toBeNull();
    expect(f.answer({ answer_1: ["Green"] })).toBeNull();
  });
});
