/**
 * The writer lease on both sides (docs/mcp-tools.md#writer-lease; docs/task-model.md#lease-files-and-the-active-slot-guard, docs/task-model.md#reconciliation): a real Bridge holds a
 * slot for a `workspace-write` task while `serverfs mcp` tries to mutate it; then the Bridge is
 * killed with SIGKILL mid-task, leaving its guard and an orphan provider group behind, and a restarted
 * Bridge reconciles them from evidence.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { type BridgeEnv, type BridgeProcess, bridgeEnv, startBridgeProcess } from "../helpers/bridge.ts";
import { errorCode, type McpSession, parseAudit, startStdio } from "../helpers/mcp-client.ts";
import { poll } from "../helpers/poll.ts";
import { type TempDir, tempDir } from "../helpers/workspace.ts";
import { allEvents, code, eventually, hasStatus, isTerminal, type Json, ok, submit, waitForTask } from "./support.ts";

let env: BridgeEnv;
let extra: TempDir;
let bridge: BridgeProcess;
let mcp: McpSession;
/** Process groups of providers started here: whatever is left of them is killed at the end. */
const groups = new Set<number>();

const guardPath = () => join(env.lockDir, "active", "01");

/** Live (not zombie) members of a process group, from /proc. */
function groupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue; // vanished mid-scan
    }
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (pgrp === String(pgid) && state !== "Z" && state !== "X") members.push(Number(name));
  }
  return members;
}

const create = (workdir: string, path: string) => mcp.call("create_text_file", { workdir, path, content: "x\n" });

/**
 * Repeats a call that needs the slot until it succeeds (bounded): a finished task's lease is held
 * until its finally path has proven the provider stopped (docs/bridge-rpc.md#taskcancel), so every refusal on the
 * way must be WORKDIR_BUSY.
 */
async function whenSlotFree(attempt: () => Promise<CallToolResult>): Promise<Json> {
  let r: CallToolResult | undefined;
  await poll(
    async () => {
      r = await attempt();
      if (r.isError) expect(errorCode(r)).toBe("WORKDIR_BUSY");
      return !r.isError;
    },
    20_000,
    "the lease's release",
  );
  return r!.structuredContent as Json;
}

beforeAll(async () => {
  extra = tempDir("sfs-w-");
  env = bridgeEnv({ extraWorkdirs: [{ slot: 2, alias: "other", path: extra.dir("other"), read_only: false }] });
  bridge = await startBridgeProcess(env);
  mcp = await startStdio(env.configPath);
});

afterAll(async () => {
  for (const pgid of groups) {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  await mcp?.close();
  if (bridge && bridge.proc.exitCode === null) await bridge.stop("SIGKILL");
  env?.dir.remove();
  extra?.remove();
});

describe("the lease held by a workspace-write task", () => {
  let taskId: string;

  test("while the task runs, every MCP mutation of its workdir is WORKDIR_BUSY; reads and other slots go on", async () => {
    taskId = await submit(mcp, { prompt: "wait:", correlation_id: "corr-lease" });
    expect((await waitForTask(mcp, taskId, hasStatus("running")))["profile"]).toBe("workspace-write");
    expect(errorCode(await create("repo", "busy.txt"))).toBe("WORKDIR_BUSY");
    expect(await code(mcp, "create_directory", { workdir: "repo", path: "busy-dir" })).toBe("WORKDIR_BUSY");
    const readme = await ok<{ revision: string }>(mcp, "read_text_file", { workdir: "repo", path: "README.md" });
    expect(
      await code(mcp, "edit_text_file", {
        workdir: "repo",
        path: "README.md",
        expected_revision: readme.revision,
        edits: [{ old_text: "demo", new_text: "x" }],
      }),
    ).toBe("WORKDIR_BUSY");
    expect(errorCode(await create("other", "free.txt"))).toBeNull();
    expect(existsSync(join(env.workspace, "busy.txt"))).toBe(false);
  });

  test("the Bridge refuses a second write task for the slot with WORKDIR_BUSY; a review task takes no lease", async () => {
    expect(await code(mcp, "submit_agent_task", { runtime: "fake", workdir: "repo", prompt: "complete:x" })).toBe("WORKDIR_BUSY");
    const reviewTask = await submit(mcp, { prompt: "complete:reviewed", profile: "review" });
    expect((await waitForTask(mcp, reviewTask, hasStatus("succeeded")))["final_response"]).toBe("reviewed");
  });

  test("once the task is cancelled and its provider stopped, mutations work again", async () => {
    expect((await ok(mcp, "cancel_agent_task", { task_id: taskId }))["status"]).toBe("cancelled");
    await whenSlotFree(() => create("repo", "after-cancel.txt"));
    expect(readFileSync(join(env.workspace, "after-cancel.txt"), "utf8")).toBe("x\n");
  });
});

describe("the lease and reconciliation: the Bridge killed mid-task", () => {
  let taskId: string;
  let pgid: number;

  test("after kill -9 the guard stays while the lock is free: the MCP side answers WORKDIR_RECOVERY_REQUIRED", async () => {
    const submitted = await whenSlotFree(() =>
      mcp.call("submit_agent_task", { runtime: "fake", workdir: "repo", prompt: "spawn:30", correlation_id: "corr-crash" }),
    );
    taskId = submitted["task_id"] as string;
    await waitForTask(mcp, taskId, hasStatus("running"));
    // the guard records the provider's group; the grandchild `sleep` joins that group
    await eventually(() => existsSync(guardPath()) && typeof (JSON.parse(readFileSync(guardPath(), "utf8")) as Json)["provider_pgid"] === "number");
    pgid = (JSON.parse(readFileSync(guardPath(), "utf8")) as { provider_pgid: number }).provider_pgid;
    groups.add(pgid);
    await eventually(() => groupMembers(pgid).length >= 2);

    bridge.proc.kill("SIGKILL");
    await bridge.proc.exited;
    // the provider loses its pipes and exits; its grandchild is left behind in the group
    await eventually(() => !groupMembers(pgid).includes(pgid));
    expect(groupMembers(pgid).length).toBeGreaterThanOrEqual(1);

    expect(existsSync(guardPath())).toBe(true);
    expect(errorCode(await create("repo", "after-crash.txt"))).toBe("WORKDIR_RECOVERY_REQUIRED");
    expect(await code(mcp, "delete_file", { workdir: "repo", path: "after-cancel.txt", expected_revision: "v1:0000000000000000" })).toBe(
      "WORKDIR_RECOVERY_REQUIRED",
    );
    expect(errorCode(await create("other", "still-free.txt"))).toBeNull();
    expect(await code(mcp, "get_agent_task", { task_id: taskId })).toBe("AGENT_BRIDGE_UNAVAILABLE");
  });

  test("a restarted Bridge terminates the orphan group, clears the guard and interrupts the task; mutations work again", async () => {
    bridge = await startBridgeProcess(env);
    expect(groupMembers(pgid)).toEqual([]);
    expect(existsSync(guardPath())).toBe(false);

    const task = await ok(mcp, "get_agent_task", { task_id: taskId });
    expect(task).toMatchObject({ status: "interrupted", error_code: "BRIDGE_RESTARTED", correlation_id: "corr-crash" });
    const events = await allEvents(mcp, taskId);
    const byType = (type: string) => events.find((e) => e["event_type"] === type)?.["payload"];
    expect(byType("runtime.reconcile_started")).toEqual({ runtime: "fake" });
    expect(byType("runtime.reconcile_finished")).toEqual({ runtime: "fake", status: "SESSION_RESUMABLE", provider_active: false });
    expect(byType("task.reconciled")).toEqual({ status: "SESSION_RESUMABLE", provider_active: false, error_code: "BRIDGE_RESTARTED" });
    expect(byType("task.interrupted")).toEqual({ error_code: "BRIDGE_RESTARTED" });

    // docs/task-model.md#reconciliation: the recovery is audited as metadata only
    await eventually(() => parseAudit(bridge.stderr()).some((r) => r["task_id"] === taskId && r["slot"] === 1));
    const recovery = parseAudit(bridge.stderr()).filter((r) => r["task_id"] === taskId);
    expect(recovery.every((r) => r["schema_version"] === 1 && r["correlation_id"] === "corr-crash")).toBe(true);
    expect(bridge.stderr()).not.toContain(env.dir.path);

    expect(errorCode(await create("repo", "after-restart.txt"))).toBeNull();
    const next = await submit(mcp, { prompt: "complete:after restart" });
    expect(await waitForTask(mcp, next, isTerminal)).toMatchObject({ status: "succeeded", final_response: "after restart" });
  });
});
