/**
 * What the debug log says about an unexpected error (src/shared/error-trace.ts): name, errno code,
 * system call and stack frames, never the message — not even a message of several lines that looks
 * like frames — and no directory above the code's own `src/`.
 */
import { expect, test } from "bun:test";
import { closeSync, openSync, readSync } from "node:fs";
import { errorTrace } from "../../src/shared/error-trace.ts";
import { ServerFsError } from "../../src/shared/errors.ts";
import { REPO_ROOT } from "../helpers/workspace.ts";

const SECRET = "/home/someone/secret-project/notes.txt";

function failingOpen(): never {
  openSync(SECRET, "r");
  throw new Error("opened a file that does not exist");
}

test("an OS error: its name, errno code, system call and frames; not its message, which names the file", () => {
  let caught: unknown;
  try {
    failingOpen();
  } catch (e) {
    caught = e;
  }
  const trace = errorTrace(caught);
  expect(trace).toMatchObject({ error_name: "Error", error_code: "ENOENT", error_syscall: "open" });
  // a file outside any src/ is named by its name alone
  expect(trace["error_frames"]).toContain("failingOpen (error-trace.test.ts:");
  const line = JSON.stringify(trace);
  expect(line).not.toContain("someone");
  expect(line).not.toContain(REPO_ROOT);
});

test("a message of several lines, one of them shaped like a frame, stays out whole", () => {
  const e = new Error(`cannot parse ${SECRET}\n    at spoof (${SECRET}:1:1)\nthe content: password=hunter2`);
  const trace = errorTrace(e);
  const line = JSON.stringify(trace);
  for (const leak of ["someone", "notes.txt", "spoof", "hunter2", "cannot parse"]) expect(line).not.toContain(leak);
  expect(trace["error_frames"]).toContain("(error-trace.test.ts:");
});

test("a mapped error keeps its cause, which the trace describes too; a thrown non-error is named by its type", () => {
  let os: unknown;
  try {
    const fd = openSync("/dev/null", "r");
    closeSync(fd);
    readSync(fd, Buffer.alloc(1));
  } catch (e) {
    os = e;
  }
  const mapped = new ServerFsError("READ_FAILED", "p:file failed", { cause: os });
  expect(mapped.cause).toBe(os);
  expect(mapped.toText()).toBe("READ_FAILED: p:file failed");
  expect(errorTrace(mapped)).toMatchObject({ error_name: "ServerFsError", error_code: "READ_FAILED", cause_name: "Error", cause_code: "EBADF" });
  expect(errorTrace("a string with /home/someone")).toEqual({ error_name: "string" });
  expect(errorTrace(null)).toEqual({ error_name: "null" });
});
