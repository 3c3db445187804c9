import { describe, expect, test } from "bun:test";
import { requestEventFields, requestSummary } from "../../src/shared/request-summary.ts";

const command = (relative_cwd?: string | null) => ({
  category: "command",
  title: "Run a command",
  command: "touch x",
  ...(relative_cwd === undefined ? {} : { relative_cwd }),
});

describe("requestSummary: what an approval says at a glance (docs/agent-requests.md)", () => {
  test("a command says where it runs: nothing at the root, its directory below it, outside, or unknown", () => {
    expect(requestSummary("approval", command())).toBe("Run a command: touch x");
    expect(requestSummary("approval", command("."))).toBe("Run a command: touch x");
    expect(requestSummary("approval", command("src/app"))).toBe("Run a command in src/app: touch x");
    expect(requestSummary("approval", command("<outside-workdir>"))).toBe("Run a command outside the workdir: touch x");
    expect(requestSummary("approval", command(null))).toBe("Run a command in an unknown directory: touch x");
  });

  test("a rename names its new path, in the summary and in the event's paths", () => {
    const payload = {
      category: "file_change",
      title: "Apply file changes",
      file_changes: [
        { path: "a.txt", kind: "rename", new_path: "docs/a.txt", diff: null },
        { path: "b.txt", kind: "update", diff: null },
      ],
    };
    expect(requestSummary("approval", payload)).toBe("Apply file changes: rename a.txt → docs/a.txt, update b.txt");
    expect(requestEventFields("approval", payload)["paths"]).toEqual([
      { path: "a.txt", kind: "rename", new_path: "docs/a.txt" },
      { path: "b.txt", kind: "update" },
    ]);
  });
});
