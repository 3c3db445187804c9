import { describe, expect, test } from "bun:test";
import { Redactor } from "../../src/shared/redact.ts";
import { outsideWorkdir } from "../../src/workers/auto-decline.ts";

// the worker judges the payload after redaction, as a human would see it
const redact = new Redactor(["/home/u/repo"]);
const judged = (payload: Record<string, unknown>): boolean => outsideWorkdir(redact.redactValue(payload));

describe("outsideWorkdir: requests naming a path outside the workdir (docs/agent-requests.md)", () => {
  test("a permission, a blocked path, a changed file (or its rename target) and a tool input path outside are each declined", () => {
    expect(judged({ requested_permissions: [{ permission_id: "file_system", write: ["/etc"] }] })).toBe(true);
    expect(judged({ blocked_path: "/etc/hostname" })).toBe(true);
    expect(judged({ file_changes: [{ path: "/tmp/x.txt", change: { write: "x" } }] })).toBe(true);
    expect(judged({ file_changes: [{ path: "/home/u/repo/a.txt", kind: "rename", new_path: "/tmp/a.txt" }] })).toBe(true);
    expect(judged({ tool_input: { file_path: "/etc/passwd" } })).toBe(true);
  });

  test("the same requests inside the workdir are shown to a human", () => {
    expect(judged({ requested_permissions: [{ permission_id: "file_system", write: ["/home/u/repo/sub"] }] })).toBe(false);
    expect(judged({ blocked_path: "/home/u/repo/made.txt" })).toBe(false);
    expect(judged({ file_changes: [{ path: "/home/u/repo/a.txt", kind: "rename", new_path: "/home/u/repo/b.txt" }] })).toBe(false);
    expect(judged({ tool_input: { file_path: "/home/u/repo/README.md" } })).toBe(false);
  });

  test("a file's new content that happens to be an outside path does not decline the change", () => {
    expect(judged({ file_changes: [{ path: "/home/u/repo/link.txt", change: { write: "/etc/passwd" } }] })).toBe(false);
  });
});
