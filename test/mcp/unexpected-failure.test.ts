/**
 * An unexpected failure leaves a trace (docs/mcp-tools.md#audit-log): the client gets the tool's
 * generic code, and the debug log a `tool_unexpected_error` line with the error's name, errno code,
 * system call and stack frames, and no path. The failure is a real one: Linux answers a `read` of
 * `/sys/class/net/lo/speed` (a 4096-byte regular file in sysfs) with EINVAL, an errno no read path
 * expects, and `download_binary_file` meets it in its read loop.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { errorCode, type McpSession } from "../helpers/mcp-client.ts";
import { startInProcess } from "../helpers/mcp-in-process.ts";
import { poll } from "../helpers/poll.ts";
import { REPO_ROOT, type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

const SYSFS_DIR = "/sys/class/net/lo";

function readFailsWithEinval(): boolean {
  try {
    readFileSync(`${SYSFS_DIR}/speed`);
    return false;
  } catch (e) {
    return (e as { code?: unknown }).code === "EINVAL";
  }
}

const available = readFailsWithEinval();
let dir: TempDir;
let session: McpSession;

beforeAll(async () => {
  if (!available) return;
  dir = tempDir();
  const config = writeConfig(dir.path, {
    server: { log_level: "debug" },
    workdirs: [{ slot: 1, alias: "sys", path: SYSFS_DIR, binary_transfer_enabled: true }],
  });
  session = await startInProcess(config);
});
afterAll(async () => {
  if (!available) return;
  await session.close();
  dir.remove();
});

test.skipIf(!available)("a read failing with an unexpected errno: READ_FAILED to the client, name, code and frames in the debug log, no path", async () => {
  const result = await session.call("download_binary_file", { workdir: "sys", path: "speed" });
  expect(errorCode(result)).toBe("READ_FAILED");
  await poll(() => session.audit().some((r) => r["event"] === "tool_unexpected_error"), 10_000, "the tool_unexpected_error line");
  const line = session.audit().find((r) => r["event"] === "tool_unexpected_error")!;
  expect(line).toMatchObject({ level: "DEBUG", tool: "download_binary_file", error_name: "Error", error_code: "EINVAL", error_syscall: "read" });
  // the frames say where: the tool's own read loop, as a place in src/
  expect(line["error_frames"]).toContain("readAtMost (src/main/mcp/tools/download-binary-file.ts:");
  const text = JSON.stringify(line);
  expect(text).not.toContain(SYSFS_DIR);
  expect(text).not.toContain(REPO_ROOT);
  expect(text).not.toContain("invalid argument");
  expect(session.stderr()).not.toContain(SYSFS_DIR);
});
