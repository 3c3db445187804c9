/**
 * Agent fidelity on the real Codex CLI, end to end: the scripted Responses mock, `codex app-server`, a
 * real `serverfs bridge` and a real `serverfs mcp` driven through the MCP SDK's Client
 * (test/fixtures/agent-stack.ts). Every approval and question is answered through the MCP Agent tools,
 * and the mock checks what reached the model (docs/agent-requests.md, docs/reliability.md "Agent
 * fidelity").
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { eventually, type Json, ok } from "../e2e/support.ts";
import {
  type AgentStack,
  CODEX_BIN,
  CODEX_PRESENT,
  cliMissing,
  crashMidTurn,
  declinedUnasked,
  expireUnanswered,
  pathVerdict,
  stackPerTest,
} from "../fixtures/agent-stack.ts";
import { type MockOpenAI, type MockStep, startMockOpenAI } from "../fixtures/mock-openai.ts";
import { scriptedAppServerBin } from "../fixtures/scripted-app-server.ts";
import { markedProcesses, recordedMark } from "../helpers/bridge.ts";
import { poll } from "../helpers/poll.ts";
import type { Table } from "../helpers/toml.ts";
import { type TempDir, tempDir } from "../helpers/workspace.ts";

if (!CODEX_PRESENT) cliMissing("Codex", CODEX_BIN, "npm install --no-save @openai/codex@0.171.0");

const startStack = stackPerTest();
const cleanupDirs: TempDir[] = [];
afterEach(() => {
  for (const d of cleanupDirs.splice(0)) d.remove();
});

async function stack(steps: MockStep[], runtimeConfig: Table = {}, lifecycle?: Table): Promise<{ s: AgentStack; mock: MockOpenAI }> {
  const mock = startMockOpenAI(steps);
  return { s: await startStack({ runtime: "codex", mock, runtimeConfig, ...(lifecycle ? { lifecycle } : {}) }), mock };
}

const UNTRUSTED = { approval_policy: "untrusted" };
const done = (say: string): MockStep => ({ say, phase: "final_answer" });

/** The workdir's entries and file contents, to prove a run changed nothing. */
function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const e of readdirSync(join(root, rel), { withFileTypes: true })) {
      const p = rel === "" ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) {
        out[`${p}/`] = "";
        walk(p);
      } else out[p] = readFileSync(join(root, p), "utf8");
    }
  };
  walk("");
  return out;
}

/** Waits (bounded) until one of the task's events has a payload that `matches`. */
function untilEvent(s: AgentStack, taskId: string, matches: (payload: Json) => boolean, ms = 30_000): Promise<void> {
  return poll(async () => (await s.events(taskId)).some((e) => matches(e["payload"] as Json)), ms, "such an event");
}

/** A human who approves everything: answers every request of the task with approve_once until it ends. */
async function approveEverything(s: AgentStack, taskId: string): Promise<{ task: Json; asked: number }> {
  let asked = 0;
  for (;;) {
    const task = await s.finishOrAsk(taskId);
    if (task["pending_request"] == null) return { task, asked };
    asked++;
    expect(await s.respond(taskId, task["pending_request"] as Json, "approve_once")).toBeNull();
  }
}

describe.skipIf(!CODEX_PRESENT)("item 1: a review task never changes the workdir, whatever [runtimes.codex] says", () => {
  const ADD = "*** Begin Patch\n*** Add File: added.txt\n+hello\n*** End Patch\n";
  const UPDATE = "*** Begin Patch\n*** Update File: README.md\n@@\n-# demo\n+# changed by a review\n*** End Patch\n";
  const cases: [string, MockStep, RegExp][] = [
    ["a command write", { exec: "echo x > written.txt" }, /read-only|rejected|denied/i],
    ["a patch add", { patch: ADD }, /rejected|read-only/i],
    ["a patch update", { patch: UPDATE }, /rejected|read-only/i],
    ["an escalated exec", { exec: "echo y > escalated.txt", escalate: true, justification: "need to write" }, /reject|never/i],
  ];
  for (const [name, step, told] of cases) {
    test(`${name}: the workdir is unchanged even when a human approves everything`, async () => {
      const { s, mock } = await stack([step, done("reviewed")], { ...UNTRUSTED, sandbox: "workspace-write" });
      const before = snapshot(s.workspace);
      const taskId = await s.submit({ profile: "review", prompt: "review this" });
      const { task, asked } = await approveEverything(s, taskId);
      expect(task).toMatchObject({ status: "succeeded", final_response: "reviewed" });
      expect(snapshot(s.workspace)).toEqual(before);
      // the model was told its action was refused, and no human was asked to allow it
      expect(mock.toolOutput("call_0")).toMatch(told);
      expect(asked).toBe(0);
    }, 60_000);
  }
});

describe.skipIf(!CODEX_PRESENT)("item 1: a review task runs beside the write task that holds the lease, and still writes nothing", () => {
  test("a review's patch add while a write task waits on its approval: the review succeeds, the workdir is unchanged", async () => {
    const ADD = "*** Begin Patch\n*** Add File: by-review.txt\n+no\n*** End Patch\n";
    const { s, mock } = await stack([{ exec: "echo w > by-writer.txt" }, { patch: ADD }, done("reviewed"), done("written")], {
      ...UNTRUSTED,
      sandbox: "workspace-write",
    });
    const before = snapshot(s.workspace);
    const writer = await s.submit({ prompt: "write" });
    // the writer holds the lease while it waits for its human
    const request = await s.pending(writer);
    const review = await s.submit({ profile: "review", prompt: "review meanwhile" });
    expect(await s.finishOrAsk(review)).toMatchObject({ status: "succeeded", final_response: "reviewed", pending_request: null });
    expect(snapshot(s.workspace)).toEqual(before);
    expect(mock.toolOutput("call_1")).toMatch(/rejected|read-only/i);
    expect(await s.respond(writer, request, "approve_once")).toBeNull();
    expect(await s.finish(writer)).toMatchObject({ status: "succeeded", final_response: "written" });
    expect(readFileSync(join(s.workspace, "by-writer.txt"), "utf8")).toBe("w\n");
    expect(existsSync(join(s.workspace, "by-review.txt"))).toBe(false);
  }, 90_000);
});

describe("item 1: an approval that still arrives for a review task is declined by the Bridge", () => {
  test("command, file-change, permission and MCP tool-call requests: each declined with approval.auto_declined (review_task), no human asked", async () => {
    const dir = tempDir("sfs-scripted-codex-");
    cleanupDirs.push(dir);
    const { s } = await stack([], { bin: scriptedAppServerBin(dir.path), ...UNTRUSTED, sandbox: "workspace-write" });
    const taskId = await s.submit({ profile: "review", prompt: "review with a pushy agent" });
    const task = await s.finishOrAsk(taskId);
    expect(task).toMatchObject({ status: "succeeded", pending_request: null });
    // the thread was opened so that Codex itself would never ask, whatever the config says
    const told = JSON.parse(String(task["final_response"])) as Json;
    expect(told).toEqual({
      approvalPolicy: "never",
      sandbox: "read-only",
      replies: { "0": { decision: "decline" }, "1": { decision: "decline" }, "2": { permissions: {}, scope: "turn" }, "3": { action: "decline" } },
    });
    const events = await s.events(taskId);
    expect(declinedUnasked(events)).toEqual([
      { category: "command", title: "Run a command", reason: "review_task" },
      { category: "file_change", title: "Apply file changes", reason: "review_task" },
      { category: "provider_permission", title: "Grant additional permissions", reason: "review_task" },
      { category: "mcp_tool", title: "Use an MCP tool", reason: "review_task" },
    ]);
  }, 60_000);
});

describe("item 1: a review whose thread keeps an extension on never starts its turn", () => {
  for (const leftOn of ["hook", "mcp_server"] as const) {
    test(`a ${leftOn} the review's config did not turn off: the task fails AGENT_PROVIDER_ERROR, nothing is asked or declined`, async () => {
      const dir = tempDir("sfs-scripted-codex-");
      cleanupDirs.push(dir);
      const { s } = await stack([], { bin: scriptedAppServerBin(dir.path, leftOn) });
      const taskId = await s.submit({ profile: "review", prompt: "review" });
      expect(await s.finish(taskId)).toMatchObject({ status: "failed", error_code: "AGENT_PROVIDER_ERROR" });
      expect(declinedUnasked(await s.events(taskId))).toEqual([]);
    }, 60_000);
  }
});

describe.skipIf(!CODEX_PRESENT)("item 2: every decision is offered", () => {
  test("a command approval offers deny; deny declines the command, the model is told, and the turn goes on", async () => {
    const { s, mock } = await stack([{ exec: "echo x > denied.txt" }, done("not run")], UNTRUSTED);
    const taskId = await s.submit({ prompt: "write a file" });
    const request = await s.pending(taskId);
    const payload = request["payload"] as Json;
    expect(payload["category"]).toBe("command");
    expect(payload["available_decisions"]).toContain("deny");
    expect(await s.respond(taskId, request, "deny")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "not run" });
    expect(existsSync(join(s.workspace, "denied.txt"))).toBe(false);
    expect(mock.toolOutput("call_0")).toMatch(/rejected by user/);
    const events = await s.events(taskId);
    expect(events.find((e) => e["event_type"] === "approval.resolved")?.["payload"]).toEqual({ decision: "deny" });
  }, 60_000);

  test("a file-change approval offers deny; deny leaves the file alone and the model is told", async () => {
    const patch = "*** Begin Patch\n*** Add File: refused.txt\n+no\n*** End Patch\n";
    const { s, mock } = await stack([{ patch }, done("left alone")], UNTRUSTED);
    const taskId = await s.submit({ prompt: "add a file" });
    const request = await s.pending(taskId);
    expect(request["payload"]).toMatchObject({ category: "file_change" });
    // an empty list offers all four decisions, deny among them (docs/agent-requests.md)
    expect((request["payload"] as Json)["available_decisions"]).toEqual([]);
    expect(await s.respond(taskId, request, "deny")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "left alone" });
    expect(existsSync(join(s.workspace, "refused.txt"))).toBe(false);
    expect(mock.toolOutput("call_0")).toMatch(/rejected by user/);
  }, 60_000);

  test("INVALID_APPROVAL_DECISION names the decisions offered", async () => {
    const { s } = await stack([{ exec: "echo x" }, done("fine")], UNTRUSTED);
    const taskId = await s.submit({ prompt: "echo" });
    const request = await s.pending(taskId);
    const offered = (request["payload"] as Json)["available_decisions"] as string[];
    expect(offered).not.toContain("approve_session");
    const r = await s.mcp.call("respond_agent_approval", { task_id: taskId, request_id: request["request_id"], decision: "approve_session" });
    const text = (r.content[0] as { text: string }).text;
    expect(text).toStartWith("INVALID_APPROVAL_DECISION: ");
    for (const d of offered) expect(text).toContain(d);
    expect(await s.respond(taskId, request, "deny")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded" });
  }, 60_000);
});

describe.skipIf(!CODEX_PRESENT)("item 5: a continuation right after success", () => {
  test("each continuation submitted as soon as its predecessor succeeded is accepted, and the model sees the history", async () => {
    const { s, mock } = await stack([done("answer one"), done("answer two"), done("answer three")]);
    let prior = await s.submit({ prompt: "prompt one" });
    expect(await s.finish(prior)).toMatchObject({ status: "succeeded", final_response: "answer one" });
    for (const [prompt, answer] of [
      ["prompt two", "answer two"],
      ["prompt three", "answer three"],
    ] as const) {
      // no pause: the predecessor's finally path may still hold the lease
      const next = await s.submit({ prompt, continue_from_task_id: prior });
      expect(await s.finish(next)).toMatchObject({ status: "succeeded", final_response: answer });
      prior = next;
    }
    const history = JSON.stringify(mock.requests.at(-1)!.body["input"]);
    for (const seen of ["prompt one", "answer one", "prompt two", "answer two", "prompt three"]) expect(history).toContain(seen);
  }, 90_000);
});

describe.skipIf(!CODEX_PRESENT)("item 7: silence while an approved command runs is not a disconnect", () => {
  test("an approved `sleep 6` with event_idle_timeout_seconds = 3 succeeds", async () => {
    const { s, mock } = await stack([{ exec: "sleep 6; echo slept-well" }, done("woke up")], { ...UNTRUSTED, event_idle_timeout_seconds: 3 });
    const taskId = await s.submit({ prompt: "sleep" });
    const request = await s.pending(taskId);
    const approvedAt = Date.now();
    expect(await s.respond(taskId, request, "approve_once")).toBeNull();
    expect(await s.finish(taskId, 60_000)).toMatchObject({ status: "succeeded", final_response: "woke up" });
    expect(Date.now() - approvedAt).toBeGreaterThanOrEqual(5_000);
    expect(mock.toolOutput("call_0")).toContain("slept-well");
  }, 90_000);
});

describe.skipIf(!CODEX_PRESENT)("item 6: Codex is run with the features its reported capabilities rely on", () => {
  const ASK: MockStep = {
    call: "request_user_input",
    args: {
      questions: [
        {
          id: "colour",
          header: "Colour",
          question: "Which colour?",
          options: [
            { label: "red", description: "warm" },
            { label: "blue", description: "cool" },
          ],
        },
      ],
    },
  };

  test("list_agent_runtimes says interactive_question, the model is offered request_user_input outside Plan mode, and an answer reaches it", async () => {
    const { s, mock } = await stack([ASK, done("blue noted")]);
    const { runtimes } = await ok<{ runtimes: Json[] }>(s.mcp, "list_agent_runtimes");
    expect(runtimes.find((r) => r["name"] === "codex")).toMatchObject({ interactive_question: true, interactive_approval: true });
    const taskId = await s.submit({ prompt: "ask me" });
    const request = await s.pending(taskId);
    expect(request).toMatchObject({ kind: "question" });
    const q = ((request["payload"] as Json)["questions"] as Json[])[0]!;
    expect(q).toMatchObject({ question_id: "colour", prompt: "Colour: Which colour?", allow_free_text: true });
    expect(await s.answer(taskId, request, [{ question_id: "colour", selected_option_ids: ["blue"], text: "a darker one" }])).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "blue noted" });
    const tools = mock.requests[0]!.body["tools"] as Json[];
    const names = tools.map((t) => t["name"]);
    expect(names).toContain("request_permissions");
    expect(String(tools.find((t) => t["name"] === "request_user_input")?.["description"])).toContain("Default");
    const told = mock.toolOutput("call_0")!;
    expect(told).toContain("blue");
    expect(told).toContain("a darker one");
  }, 60_000);

  test("no Codex config file is written: the features travel on thread/start, CODEX_HOME's config is untouched", async () => {
    const { s } = await stack([done("ok")]);
    const tomls = () => (readdirSync(s.runtimeHome, { recursive: true }) as string[]).filter((f) => f.endsWith(".toml")).sort();
    const config = readFileSync(join(s.runtimeHome, "config.toml"), "utf8");
    const before = tomls();
    const taskId = await s.submit({ prompt: "hello" });
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded" });
    expect(tomls()).toEqual(before);
    expect(readFileSync(join(s.runtimeHome, "config.toml"), "utf8")).toBe(config);
    expect(readdirSync(s.workspace).filter((f) => f.endsWith(".toml"))).toEqual([]);
  }, 60_000);
});

describe.skipIf(!CODEX_PRESENT)("permission requests, and requests naming a path outside the workdir", () => {
  test("inside the workdir: a provider_permission approval; the granted subset is what the model is told", async () => {
    const { s, mock } = await stack(
      [
        { call: "request_permissions", args: { permissions: { file_system: { write: ["sub"] }, network: { enabled: true } }, reason: "let me write" } },
        done("granted"),
      ],
      UNTRUSTED,
    );
    const taskId = await s.submit({ prompt: "ask for access" });
    const request = await s.pending(taskId);
    const payload = request["payload"] as Json;
    expect(payload).toMatchObject({ category: "provider_permission", reason: "let me write" });
    const requested = payload["requested_permissions"] as Json[];
    expect(requested.map((p) => p["permission_id"]).sort()).toEqual(["file_system", "network"]);
    expect(JSON.stringify(requested)).toContain('"sub"');
    expect(JSON.stringify(payload)).not.toContain(s.workspace);
    expect(payload["summary"]).toBe("Grant additional permissions: network, file_system");
    const asked = (await s.events(taskId)).find((e) => e["event_type"] === "approval.requested")!["payload"] as Json;
    expect(asked).toMatchObject({ summary: payload["summary"], category: "provider_permission" });
    expect(await s.respond(taskId, request, "approve_once", ["network"])).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "granted" });
    const told = JSON.parse(mock.toolOutput("call_0")!) as Json;
    expect(told).toMatchObject({ permissions: { network: { enabled: true }, file_system: null }, scope: "turn" });
  }, 60_000);

  test("outside the workdir: declined by the Bridge with approval.auto_declined (outside_workdir), no human asked", async () => {
    const { s, mock } = await stack(
      [{ call: "request_permissions", args: { permissions: { file_system: { write: ["/etc"] } }, reason: "outside" } }, done("declined")],
      UNTRUSTED,
    );
    const taskId = await s.submit({ prompt: "ask for /etc" });
    const task = await s.finishOrAsk(taskId);
    expect(task).toMatchObject({ status: "succeeded", final_response: "declined", pending_request: null });
    const events = await s.events(taskId);
    expect(declinedUnasked(events)).toEqual([{ category: "provider_permission", title: expect.any(String), reason: "outside_workdir" }]);
    expect(JSON.parse(mock.toolOutput("call_0")!)).toMatchObject({ permissions: { file_system: null } });
  }, 60_000);

  test("a patch touching a file outside the workdir: declined by the Bridge (outside_workdir), nothing written, the model told", async () => {
    const outside = join("/tmp", `sfs-codex-outside-${process.pid}.txt`);
    rmSync(outside, { force: true });
    const { s, mock } = await stack([{ patch: `*** Begin Patch\n*** Add File: ${outside}\n+escaped\n*** End Patch\n` }, done("stayed inside")], UNTRUSTED);
    const taskId = await s.submit({ prompt: "write outside" });
    expect(await s.finishOrAsk(taskId)).toMatchObject({ status: "succeeded", final_response: "stayed inside", pending_request: null });
    expect(existsSync(outside)).toBe(false);
    const events = await s.events(taskId);
    expect(declinedUnasked(events)).toEqual([{ category: "file_change", title: "Apply file changes", reason: "outside_workdir" }]);
    expect(mock.toolOutput("call_0")).toMatch(/rejected by user/);
  }, 60_000);
});

describe.skipIf(!CODEX_PRESENT)("outside is where a path lands, not how it is spelled", () => {
  test("each spelling in a patch or a permission request: declined unasked, or shown as where it lands", async () => {
    const { s, mock } = await stack([], UNTRUSTED);
    // beside the workdir: `link` leads there, and so does the file link `leaf.txt`; `inlink` stays inside
    const outside = join(dirname(s.workspace), "outside");
    mkdirSync(outside);
    writeFileSync(join(outside, "x.txt"), "outside canary\n");
    symlinkSync(outside, join(s.workspace, "link"));
    symlinkSync("../outside/x.txt", join(s.workspace, "leaf.txt"));
    mkdirSync(join(s.workspace, "sub"));
    symlinkSync("sub", join(s.workspace, "inlink"));
    const add = (path: string): MockStep => ({ patch: `*** Begin Patch\n*** Add File: ${path}\n+written\n*** End Patch\n` });
    const move = (to: string): MockStep => ({
      patch: `*** Begin Patch\n*** Update File: README.md\n*** Move to: ${to}\n@@\n-# demo\n+# moved\n*** End Patch\n`,
    });
    const ask = (access: "read" | "write", path: string): MockStep => ({
      call: "request_permissions",
      args: { permissions: { file_system: { [access]: [path] } }, reason: "access" },
    });
    const cases: [string, MockStep, "declined" | string[]][] = [
      ["patch: add ../outside/new.txt", add("../outside/new.txt"), "declined"],
      ["patch: add src/../../outside/new.txt", add("src/../../outside/new.txt"), "declined"],
      ["patch: add link/new.txt (a link to outside)", add("link/new.txt"), "declined"],
      [
        "patch: update leaf.txt (a file link to outside)",
        { patch: "*** Begin Patch\n*** Update File: leaf.txt\n@@\n-outside canary\n+changed\n*** End Patch\n" },
        "declined",
      ],
      ["patch: rename README.md to ../outside/moved.txt", move("../outside/moved.txt"), "declined"],
      ["patch: rename README.md to link/moved.txt", move("link/moved.txt"), "declined"],
      ["permission: write ../outside", ask("write", "../outside"), "declined"],
      ["permission: read src/../../outside/x.txt", ask("read", "src/../../outside/x.txt"), "declined"],
      ["permission: write ~/.ssh (Codex's home)", ask("write", "~/.ssh"), "declined"],
      ["permission: write link", ask("write", "link"), "declined"],
      ["permission: read link/x.txt", ask("read", "link/x.txt"), "declined"],
      // Codex takes these spellings as relative names: they land inside, and are shown where they land
      ["patch: add ~/.ssh/id_rsa", add("~/.ssh/id_rsa"), ["~/.ssh/id_rsa"]],
      ["patch: add file:///etc/passwd", add("file:///etc/passwd"), ["file:/etc/passwd"]],
      ["permission: read file:///etc/passwd", ask("read", "file:///etc/passwd"), ["file:/etc/passwd"]],
      ["patch: add inlink/new.txt (a link inside)", add("inlink/new.txt"), ["sub/new.txt"]],
      ["permission: write inlink (a link inside)", ask("write", "inlink"), ["sub"]],
    ];
    // each request is answered from its own task's prompt: a late request of an earlier task takes no later case's step
    mock.script({
      poll: (request) => {
        const seen = JSON.stringify(request.body["input"]);
        const index = cases.findIndex((_, i) => seen.includes(`[case ${i}]`));
        return index < 0 || seen.includes('_call_output"') ? done("next") : cases[index]![1];
      },
    });
    const verdicts: Record<string, "declined" | string[]> = {};
    for (const [i, [name]] of cases.entries()) verdicts[name] = await pathVerdict(s, await s.submit({ prompt: `[case ${i}] ${name}` }));
    expect(verdicts).toEqual(Object.fromEntries(cases.map(([name, , verdict]) => [name, verdict])));
    expect(readdirSync(outside)).toEqual(["x.txt"]);
    expect(readFileSync(join(outside, "x.txt"), "utf8")).toBe("outside canary\n");
  }, 300_000);
});

describe.skipIf(!CODEX_PRESENT)("item 3: an approval says what it will do", () => {
  test("a command approval shows the command the model asked for and its reason; the event carries the summary", async () => {
    const { s } = await stack([{ exec: "echo hi > said.txt", escalate: true, justification: "to write said.txt" }, done("ok")], UNTRUSTED);
    const taskId = await s.submit({ prompt: "say hi" });
    const request = await s.pending(taskId);
    const payload = request["payload"] as Json;
    expect(payload).toMatchObject({ category: "command", command: "echo hi > said.txt", reason: "to write said.txt" });
    expect(payload["summary"]).toBe("Run a command: echo hi > said.txt");
    const asked = (await s.events(taskId)).find((e) => e["event_type"] === "approval.requested")!["payload"] as Json;
    expect(asked).toMatchObject({ summary: payload["summary"], category: "command", command: "echo hi > said.txt" });
    expect(await s.respond(taskId, request, "deny")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded" });
  }, 60_000);

  test("a patch approval gives each file its kind and a workdir-relative unified diff; a denied file's content is withheld", async () => {
    const patch = [
      "*** Begin Patch",
      "*** Update File: README.md",
      "@@",
      "-# demo",
      "+# demo, improved",
      "*** Delete File: src/old.txt",
      "*** Add File: src/new.txt",
      "+fresh line",
      "*** Delete File: .env",
      "*** End Patch",
      "",
    ].join("\n");
    const { s } = await stack([{ patch }, done("judged")], UNTRUSTED);
    await Bun.write(join(s.workspace, "src/old.txt"), "going away\n");
    await Bun.write(join(s.workspace, ".env"), "SECRET=canary-env-value\n");
    const taskId = await s.submit({ prompt: "patch it" });
    const request = await s.pending(taskId);
    const payload = request["payload"] as Json;
    expect(payload["category"]).toBe("file_change");
    // Codex lists a patch's files in path order
    const changes = payload["file_changes"] as Json[];
    expect(changes).toEqual([
      { path: ".env", kind: "delete", diff: null, withheld: true },
      { path: "README.md", kind: "update", diff: "--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-# demo\n+# demo, improved\n" },
      { path: "src/new.txt", kind: "add", diff: "--- /dev/null\n+++ b/src/new.txt\n@@ -0,0 +1 @@\n+fresh line\n" },
      { path: "src/old.txt", kind: "delete", diff: "--- a/src/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-going away\n" },
    ]);
    expect(JSON.stringify(request)).not.toContain("canary-env-value");
    expect(JSON.stringify(request)).not.toContain(s.workspace);
    expect(payload["summary"]).toBe("Apply file changes: delete .env, update README.md, add src/new.txt, delete src/old.txt");
    const asked = (await s.events(taskId)).find((e) => e["event_type"] === "approval.requested")!["payload"] as Json;
    expect(asked).toMatchObject({
      summary: payload["summary"],
      category: "file_change",
      paths: changes.map((c) => ({ path: c["path"], kind: c["kind"] })),
    });
    expect(JSON.stringify(asked)).not.toContain("improved");
    expect(await s.respond(taskId, request, "deny")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "judged" });
    expect(readFileSync(join(s.workspace, "README.md"), "utf8")).toBe("# demo\n");
  }, 60_000);

  test("a rename names its new path, workdir-relative, in the change, the summary and the event", async () => {
    const patch = "*** Begin Patch\n*** Update File: README.md\n*** Move to: docs/README.md\n@@\n-# demo\n+# moved\n*** End Patch\n";
    const { s } = await stack([{ patch }, done("judged")], UNTRUSTED);
    const taskId = await s.submit({ prompt: "move the readme" });
    const request = await s.pending(taskId);
    const payload = request["payload"] as Json;
    expect(payload["file_changes"]).toMatchObject([{ path: "README.md", kind: "rename", new_path: "docs/README.md" }]);
    expect(payload["summary"]).toBe("Apply file changes: rename README.md → docs/README.md");
    const asked = (await s.events(taskId)).find((e) => e["event_type"] === "approval.requested")!["payload"] as Json;
    expect(asked).toMatchObject({ summary: payload["summary"], paths: [{ path: "README.md", kind: "rename", new_path: "docs/README.md" }] });
    expect(JSON.stringify(request)).not.toContain(s.workspace);
    expect(await s.respond(taskId, request, "deny")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "judged" });
    expect(existsSync(join(s.workspace, "docs/README.md"))).toBe(false);
  }, 60_000);

  test("a diff longer than 16 KiB is cut and says truncated", async () => {
    const big = Array.from({ length: 1200 }, (_, i) => `+line ${i} ${"x".repeat(20)}`).join("\n");
    const { s } = await stack([{ patch: `*** Begin Patch\n*** Add File: big.txt\n${big}\n*** End Patch\n` }, done("big")], UNTRUSTED);
    const taskId = await s.submit({ prompt: "add a big file" });
    const request = await s.pending(taskId);
    const [change] = (request["payload"] as Json)["file_changes"] as Json[];
    expect(change).toMatchObject({ path: "big.txt", kind: "add", truncated: true });
    expect(Buffer.byteLength(String(change!["diff"]))).toBeLessThanOrEqual(16_384);
    expect(String(change!["diff"])).toStartWith("--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,1200 @@\n+line 0 ");
    expect(await s.respond(taskId, request, "deny")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded" });
  }, 60_000);
});

describe.skipIf(!CODEX_PRESENT)("item 4: events tell what happened", () => {
  test("a command's output reaches its item.completed event, cut to its last 4 KiB", async () => {
    const { s } = await stack([{ exec: "for i in $(seq 1 600); do echo line-$i-of-output; done; echo THE-END" }, done("printed")], UNTRUSTED);
    const taskId = await s.submit({ prompt: "print a lot" });
    const { task } = await approveEverything(s, taskId);
    expect(task).toMatchObject({ status: "succeeded", final_response: "printed" });
    const completed = (await s.events(taskId))
      .map((e) => e["payload"] as Json)
      .find((p) => p["type"] === "commandExecution" && typeof p["output"] === "string")!;
    expect(completed).toMatchObject({ status: "completed", exitCode: 0, truncated: true });
    const output = String(completed["output"]);
    expect(Buffer.byteLength(output)).toBeLessThanOrEqual(4096);
    expect(output.trimEnd()).toEndWith("THE-END");
    expect(output).not.toContain("line-1-of-output");
  }, 60_000);
});

describe.skipIf(!CODEX_PRESENT)("item 8: a cancelled sandbox leaves no litter", () => {
  test("cancel mid-command: the sandbox's empty .git/.codex/.aws go once the group is stopped; what existed before stays", async () => {
    const { s } = await stack([{ exec: "sleep 30" }, done("never")], { approval_policy: "never", sandbox: "workspace-write" });
    mkdirSync(join(s.workspace, ".agents"));
    const entries = () => readdirSync(s.workspace).sort();
    const taskId = await s.submit({ prompt: "sleep a while" });
    // the command is running inside its sandbox, whose mount points are now in the workdir
    await eventually(() => entries().includes(".git"), 30_000);
    expect(await ok(s.mcp, "cancel_agent_task", { task_id: taskId })).toMatchObject({ status: "cancelled" });
    await eventually(() => !entries().includes(".git"), 30_000);
    await eventually(() => !entries().includes(".codex") && !entries().includes(".aws"), 5_000);
    expect(entries()).toEqual([".agents", "README.md", "src"]);
    // git works there again: no empty .git shadows a repository
    expect(existsSync(join(s.workspace, ".git"))).toBe(false);
  }, 60_000);

  test("the task deadline mid-command: interrupted AGENT_TASK_TIMED_OUT, and the sandbox's litter goes too", async () => {
    const { s } = await stack([{ exec: "sleep 30" }, done("never")], { approval_policy: "never", sandbox: "workspace-write" }, { task_timeout_seconds: 4 });
    const entries = () => readdirSync(s.workspace).sort();
    const taskId = await s.submit({ prompt: "sleep past the deadline" });
    await eventually(() => entries().includes(".git"), 30_000);
    expect(await s.finish(taskId)).toMatchObject({ error_code: "AGENT_TASK_TIMED_OUT" });
    await eventually(() => entries().join() === "README.md,src", 30_000);
  }, 60_000);
});

describe.skipIf(!CODEX_PRESENT)("item 9: every human-in-the-loop path of Codex through the Bridge and MCP", () => {
  test("a patch add, update and delete, approved: the files change as the approval showed", async () => {
    const patch = [
      "*** Begin Patch",
      "*** Add File: src/added.txt",
      "+added",
      "*** Update File: README.md",
      "@@",
      "-# demo",
      "+# demo, approved",
      "*** Delete File: src/doomed.txt",
      "*** End Patch",
      "",
    ].join("\n");
    const { s, mock } = await stack([{ patch }, done("applied")], UNTRUSTED);
    await Bun.write(join(s.workspace, "src/doomed.txt"), "doomed\n");
    const taskId = await s.submit({ prompt: "apply" });
    const request = await s.pending(taskId);
    const kinds = ((request["payload"] as Json)["file_changes"] as Json[]).map((c) => [c["path"], c["kind"]]);
    expect(kinds).toEqual([
      ["README.md", "update"],
      ["src/added.txt", "add"],
      ["src/doomed.txt", "delete"],
    ]);
    expect(await s.respond(taskId, request, "approve_once")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "applied" });
    expect(readFileSync(join(s.workspace, "src/added.txt"), "utf8")).toBe("added\n");
    expect(readFileSync(join(s.workspace, "README.md"), "utf8")).toBe("# demo, approved\n");
    expect(existsSync(join(s.workspace, "src/doomed.txt"))).toBe(false);
    expect(mock.toolOutput("call_0")).toContain("Success");
  }, 60_000);

  test("cancel_task on a command approval: the task is cancelled, the command never runs, no provider process is left", async () => {
    const { s } = await stack([{ exec: "echo x > cancelled.txt" }, done("unreachable")], UNTRUSTED);
    const taskId = await s.submit({ prompt: "write" });
    const request = await s.pending(taskId);
    const mark = recordedMark(s.env.stateDir, taskId);
    expect(await s.respond(taskId, request, "cancel_task")).toBeNull();
    expect(await s.finish(taskId)).toMatchObject({ status: "cancelled" });
    await eventually(() => markedProcesses(mark).length === 0, 20_000);
    expect(existsSync(join(s.workspace, "cancelled.txt"))).toBe(false);
  }, 60_000);

  test("cancel mid-command: the command's process is gone once the task is cancelled", async () => {
    const { s } = await stack([{ exec: "sleep 47.25" }, done("never")], { approval_policy: "never", sandbox: "workspace-write" });
    const taskId = await s.submit({ prompt: "sleep" });
    await untilEvent(s, taskId, (p) => p["type"] === "commandExecution");
    const mark = recordedMark(s.env.stateDir, taskId);
    const sleeping = () => markedProcesses(mark).filter((pid) => readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("47.25"));
    await eventually(() => sleeping().length > 0, 30_000);
    expect(await ok(s.mcp, "cancel_agent_task", { task_id: taskId })).toMatchObject({ status: "cancelled" });
    await eventually(() => markedProcesses(mark).length === 0, 30_000);
  }, 60_000);

  test("steering reaches the model: the next request carries the message", async () => {
    const { s, mock } = await stack([{ exec: "sleep 2" }, done("steered")], { approval_policy: "never", sandbox: "workspace-write" });
    const taskId = await s.submit({ prompt: "work" });
    // steer while the command runs: Codex hands the message to the model with the command's output
    await untilEvent(s, taskId, (p) => p["type"] === "commandExecution");
    expect(await ok(s.mcp, "send_agent_message", { task_id: taskId, message: "please also say steered" })).toMatchObject({ accepted: true });
    expect(await s.finish(taskId)).toMatchObject({ status: "succeeded", final_response: "steered" });
    expect(JSON.stringify(mock.requests.at(-1)!.body["input"])).toContain("please also say steered");
  }, 60_000);

  test("an approval nobody answers expires: the task is interrupted AGENT_INTERACTION_TIMED_OUT and the provider stopped", async () => {
    const { s } = await stack([{ exec: "echo late" }, done("never")], UNTRUSTED, { interaction_timeout_seconds: 2 });
    await expireUnanswered(s, await s.submit({ prompt: "ask and wait" }));
  }, 60_000);

  test("a provider crash mid-turn fails the task AGENT_PROVIDER_ERROR", async () => {
    const { s, mock } = await stack([{ hang: true }]);
    const taskId = await crashMidTurn(s, mock);
    expect(await s.finish(taskId)).toMatchObject({ status: "failed", error_code: "AGENT_PROVIDER_ERROR" });
  }, 60_000);
});
