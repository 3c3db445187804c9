import { describe, expect, test } from "bun:test";
import { OUTSIDE_MARK, Redactor } from "../../src/shared/redact.ts";
import { landPaths, outsideWorkdir } from "../../src/workers/auto-decline.ts";
import type { ApprovalPayload } from "../../src/workers/providers/types.ts";

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

describe("landPaths: every path a request names, put where it lands", () => {
  // a stand-in for the worker's resolution: `link/…` leads outside, everything else lands as spelled
  const land = (p: string): string => (p.includes("link/") ? OUTSIDE_MARK : `/home/u/repo/${p.replace(/^\/home\/u\/repo\//, "")}`);
  const landed = (payload: ApprovalPayload): boolean => outsideWorkdir(redact.redactValue({ ...landPaths(payload, land) }));
  const base: Pick<ApprovalPayload, "title" | "available_decisions"> = { title: "t", available_decisions: [] };

  test("a blocked path, a changed file or its rename target, a permission path and a tool's input path that land outside are declined", () => {
    expect(landed({ ...base, category: "command", blocked_path: "link/x" })).toBe(true);
    expect(landed({ ...base, category: "file_change", file_changes: [{ path: "a.txt", kind: "rename", new_path: "link/a.txt" }] })).toBe(true);
    const details = { read: null, write: ["link/x"], entries: [{ path: { type: "path", path: "link/x" }, access: "write" }] };
    expect(landed({ ...base, category: "provider_permission", requested_permissions: [{ permission_id: "file_system", kind: "file_system", details }] })).toBe(
      true,
    );
    expect(landed({ ...base, category: "other", tool: "Read", tool_input: { file_path: "link/x" } })).toBe(true);
  });

  test("a file-system permission entry that is no path (a special location) counts as outside", () => {
    const details = { entries: [{ path: { type: "special", value: { kind: "root" } }, access: "read" }] };
    expect(landed({ ...base, category: "provider_permission", requested_permissions: [{ permission_id: "file_system", kind: "file_system", details }] })).toBe(
      true,
    );
  });

  test("a command's directory outside is said, not declined; an MCP tool's input keys are its server's, only redacted", () => {
    const command = landPaths({ ...base, category: "command", command: "ls", relative_cwd: "link/x" }, land);
    expect(command.relative_cwd).toBe(OUTSIDE_MARK);
    expect(outsideWorkdir(redact.redactValue({ ...command }))).toBe(false);
    const mcp = { ...base, category: "mcp_tool" as const, tool: "mcp__serverfs__read_file", tool_input: { workdir: "repo", path: "link/x" } };
    expect(landPaths(mcp, land).tool_input).toEqual({ workdir: "repo", path: "link/x" });
  });
});
