import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ServerFsError } from "../../src/shared/errors.ts";
import { newMark, newTaskId } from "../../src/shared/ids.ts";
import { checkProcessGroup, readProcStat, terminateProcessGroup } from "../../src/shared/process-group.ts";
import { createFakeAdapter } from "../../src/workers/providers/fake.ts";
import {
  type ApprovalPayload,
  type ApprovalResolution,
  type Decision,
  type NativeFacts,
  NO_CHOICES,
  type Outcome,
  type QuestionPayload,
  type QuestionResolution,
  type RunContext,
  type RunHandle,
} from "../../src/workers/providers/types.ts";
import { FAKE_RUNTIME_ENTRY } from "../helpers/contract-shapes.ts";
import { holdsWithin, poll } from "../helpers/poll.ts";
import { groupMembers } from "../helpers/proc-scan.ts";
import { fakeQuestion } from "../helpers/questions.ts";
import { type TempDir, tempDir } from "../helpers/workspace.ts";

const QUICK = { graceMs: 1000, verifyMs: 3000, pollMs: 20 };

let dir: TempDir;
beforeAll(() => {
  dir = tempDir();
});
afterAll(() => dir.remove());

interface Recorded {
  taskId: string;
  mark: string;
  /** What the caller saw, in order: "native", "event", "approval", "question". */
  order: string[];
  natives: NativeFacts[];
  events: { type: string; payload: Record<string, unknown> }[];
  approvals: ApprovalPayload[];
  questions: QuestionPayload[];
  /** Provider output lines reported through `activity()`. */
  lines?: number;
  /** /proc facts read while recordNative({pgid, startTime}) ran. */
  leaderAtRecord: { pgrp: number; startTime: number; environHasMark: boolean } | null;
  handle: RunHandle;
  outcome: Promise<Outcome>;
}

interface RunOptions {
  profile?: RunContext["profile"];
  continueFrom?: string | null;
  decisions?: Decision[];
  approvalFails?: boolean;
  answer?: QuestionResolution | "refuse";
  recordNativeFails?: boolean;
  /** recordNative({pgid}) waits for it: the test shows nothing reaches the provider before it resolves. */
  holdRecord?: Promise<void>;
  adapter?: ReturnType<typeof createFakeAdapter>;
}

const running: RunHandle[] = [];

/** A provider that exits at once may already be reaped when this runs. */
function procFile(pid: number, name: "environ" | "io"): string {
  try {
    return readFileSync(`/proc/${pid}/${name}`, "latin1");
  } catch {
    return "";
  }
}

/** What process `pid` has written so far (/proc/<pid>/io `wchar`), 0 once it is gone. */
function bytesWritten(pid: number): number {
  return Number(/^wchar: (\d+)$/m.exec(procFile(pid, "io"))?.[1] ?? 0);
}

/**
 * Whether the leader's environment carries `entry` once it has exec'd. Between fork and exec /proc shows
 * the forked copy of this process's own environment, which carries no mark; when that window ends is
 * the exec's business, so the wait is for the entry itself (nothing reaches the provider before
 * recordNative returns, so the leader is still there to be read).
 */
function environCarries(pid: number, entry: string): Promise<boolean> {
  return holdsWithin(() => procFile(pid, "environ").split("\0").includes(entry));
}

function run(prompt: string, o: RunOptions = {}): Recorded {
  const taskId = newTaskId();
  const mark = newMark();
  const decisions = [...(o.decisions ?? [])];
  const rec: Partial<Recorded> & Pick<Recorded, "order" | "natives" | "events" | "approvals" | "questions"> = {
    taskId,
    mark,
    order: [],
    natives: [],
    events: [],
    approvals: [],
    questions: [],
    leaderAtRecord: null,
  };
  const ctx: RunContext = {
    taskId,
    cwd: dir.path,
    prompt,
    profile: o.profile ?? "workspace-write",
    continueNativeSessionId: o.continueFrom ?? null,
    choices: NO_CHOICES,
    mark,
    env: process.env,
    emit(type, payload) {
      rec.order.push("event");
      rec.events.push({ type, payload });
    },
    async requestApproval(payload): Promise<ApprovalResolution> {
      rec.order.push("approval");
      rec.approvals.push(payload);
      if (o.approvalFails) throw new ServerFsError("AGENT_INTERACTION_EXPIRED", "the request expired");
      return { decision: decisions.shift() ?? "approve_once", granted_permission_ids: [] };
    },
    async askQuestion(payload): Promise<QuestionResolution> {
      rec.order.push("question");
      rec.questions.push(payload);
      if (o.answer === "refuse" || o.answer === undefined) throw new ServerFsError("AGENT_INTERACTION_EXPIRED", "the request expired");
      return o.answer;
    },
    abandonInteraction() {
      rec.order.push("abandon");
    },
    started() {
      // the provider worker's cue to move the task to running; nothing to record here
    },
    activity() {
      rec.lines = (rec.lines ?? 0) + 1;
    },
    busy: () => undefined,
    async recordNative(facts) {
      rec.order.push("native");
      rec.natives.push(facts);
      if (facts.pgid !== undefined) {
        // read after the exec, by which time the child has also joined its own group
        const environHasMark = await environCarries(facts.pgid, `SERVERFS_PROVIDER_MARK=${mark}`);
        const stat = readProcStat(facts.pgid);
        rec.leaderAtRecord = stat && {
          pgrp: stat.pgrp,
          startTime: stat.startTime,
          environHasMark,
        };
        await o.holdRecord;
        if (o.recordNativeFails) throw new ServerFsError("AGENT_RESULT_STORAGE_ERROR", "could not record");
      }
    },
  };
  const handle = (o.adapter ?? adapter).start(ctx);
  running.push(handle);
  rec.handle = handle;
  rec.outcome = handle.outcome;
  return rec as Recorded;
}

const adapter = createFakeAdapter();

/** Ends a run the way the finally path does: close input, wait, then prove the group gone. */
async function finish(r: Recorded): Promise<void> {
  await r.handle.closeAndWait(5000);
  if (r.handle.pgid !== null) {
    const stat = r.natives[0]?.startTime ?? null;
    expect((await terminateProcessGroup(r.handle.pgid, stat, r.mark, QUICK)).proven).toBe(true);
  }
}

afterAll(async () => {
  for (const h of running) h.cancel();
});

async function outcomeOf(prompt: string, o: RunOptions = {}): Promise<{ r: Recorded; outcome: Outcome }> {
  const r = run(prompt, o);
  const outcome = await r.outcome;
  await finish(r);
  return { r, outcome };
}

const finalText = (o: Outcome): string => {
  if (o.kind !== "final") throw new Error(`expected a final text, got ${JSON.stringify(o)}`);
  return o.text;
};

describe("runtime.list entry for fake", () => {
  test("probe reports version 1, every capability and session-resume recovery", async () => {
    expect(await adapter.probe()).toEqual(FAKE_RUNTIME_ENTRY);
  });
});

describe("execution steps 2–3 spawn and the durable process group", () => {
  test("recordNative gets the real pgid (== the leader's pid, own group) and /proc start time before anything else", async () => {
    const { r, outcome } = await outcomeOf("events:2");
    expect(finalText(outcome)).toBe("events=2");
    expect(r.order[0]).toBe("native");
    const first = r.natives[0]!;
    expect(Object.keys(first).sort()).toEqual(["pgid", "startTime"]);
    expect(first.pgid).toBe(r.handle.pgid!);
    expect(r.leaderAtRecord).toEqual({ pgrp: first.pgid!, startTime: first.startTime!, environHasMark: true });
    expect(first.pgid).not.toBe(process.pid);
  });

  test("the provider gets its task input only after recordNative resolved", async () => {
    const hold = Promise.withResolvers<void>();
    const r = run("complete:x", { holdRecord: hold.promise });
    // the provider is up and has written its ready line (its first write) while recordNative holds
    await poll(() => r.handle.pgid !== null && bytesWritten(r.handle.pgid) > 0, 10_000, "the provider's ready line");
    // still inside recordNative: no session, no event, no outcome yet
    expect(r.order).toEqual(["native"]);
    hold.resolve();
    expect(finalText(await r.outcome)).toBe("x");
    expect(r.order).toEqual(["native", "native"]);
    await finish(r);
  });

  test("a failing recordNative ends the run with its code and the provider never starts the task", async () => {
    const { r, outcome } = await outcomeOf("complete:x", { recordNativeFails: true });
    expect(outcome).toEqual({ kind: "failed", code: "AGENT_RESULT_STORAGE_ERROR", message: "could not record" });
    expect(r.natives).toHaveLength(1);
  });

  test("a missing binary is AGENT_RUNTIME_UNAVAILABLE with no process group", async () => {
    const broken = createFakeAdapter({ command: [join(dir.path, "no-such-binary")] });
    const r = run("complete:x", { adapter: broken });
    expect(r.handle.pgid).toBeNull();
    const outcome = await r.outcome;
    expect(outcome.kind === "failed" && outcome.code).toBe("AGENT_RUNTIME_UNAVAILABLE");
    expect(r.natives).toHaveLength(0);
    await expect(r.handle.sendMessage("hi")).rejects.toMatchObject({ code: "AGENT_TASK_NOT_ACTIVE" });
  });

  test("a provider that fails its handshake is AGENT_RUNTIME_NOT_READY", async () => {
    const mute = createFakeAdapter({ command: ["sh", "-c", "echo hello; echo oops >&2"] });
    const { outcome } = await outcomeOf("complete:x", { adapter: mute });
    expect(outcome).toMatchObject({ kind: "failed", code: "AGENT_RUNTIME_NOT_READY" });
  });
});

describe("docs/runtimes.md fake: the scripted runtime", () => {
  test("complete:TEXT completes with TEXT; native ids are fake-session-<id> and fake-turn-<id>", async () => {
    const { r, outcome } = await outcomeOf("complete:all done: yes");
    expect(outcome).toEqual({ kind: "final", text: "all done: yes" });
    expect(r.natives[1]).toEqual({ sessionId: `fake-session-${r.taskId}`, turnId: `fake-turn-${r.taskId}` });
    // every line the provider wrote reached the idle timer as activity
    expect(r.lines ?? 0).toBeGreaterThan(0);
  });

  test("repeat:N:TEXT completes with exactly N × bytes(TEXT) bytes", async () => {
    const { outcome } = await outcomeOf("repeat:5:ab€");
    expect(finalText(outcome)).toBe("ab€ab€ab€ab€ab€");
    expect(Buffer.byteLength(finalText(outcome))).toBe(25);
    const { outcome: empty } = await outcomeOf("repeat:0:x");
    expect(empty).toEqual({ kind: "final", text: "" });
  });

  test("an 8 MiB + 1 final text passes through the line reader intact", async () => {
    const { outcome } = await outcomeOf("repeat:8388609:x");
    const text = finalText(outcome);
    expect(text.length).toBe(8_388_609);
    expect(/^x+$/.test(text)).toBe(true);
  });

  test("events:N emits N agent.message events 'event <i>' and completes with events=N", async () => {
    const { r, outcome } = await outcomeOf("events:150");
    expect(finalText(outcome)).toBe("events=150");
    expect(r.events).toHaveLength(150);
    expect(r.events[0]).toEqual({ type: "agent.message", payload: { text: "event 1" } });
    expect(r.events[149]).toEqual({ type: "agent.message", payload: { text: "event 150" } });
    expect(r.events.every((e, i) => e.payload["text"] === `event ${i + 1}`)).toBe(true);
  });

  test("sleep:MS:TEXT waits MS milliseconds, then completes with TEXT", async () => {
    const started = Date.now();
    const { outcome } = await outcomeOf("sleep:300:woke");
    expect(finalText(outcome)).toBe("woke");
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  });

  test("approval:CMD asks one command approval with all four decisions", async () => {
    const { r, outcome } = await outcomeOf("approval:rm -rf build", { decisions: ["approve_session"] });
    expect(finalText(outcome)).toBe("approval=approve_session");
    expect(r.approvals).toEqual([
      {
        category: "command",
        title: "Run a command",
        command_display: "rm -rf build",
        available_decisions: ["approve_once", "approve_session", "deny", "cancel_task"],
      },
    ]);
  });

  test("approval:CMD completes with approval=<decision> for approve_once and deny", async () => {
    for (const d of ["approve_once", "deny"] as const) {
      const { outcome } = await outcomeOf("approval:ls", { decisions: [d] });
      expect(finalText(outcome)).toBe(`approval=${d}`);
    }
  });

  test("approval:CMD answered cancel_task cancels", async () => {
    const { outcome } = await outcomeOf("approval:ls", { decisions: ["cancel_task"] });
    expect(outcome).toEqual({ kind: "cancelled" });
  });

  test("an approval that cannot be answered (expired) is a no to the provider, and the run goes on", async () => {
    const { outcome } = await outcomeOf("approval:ls", { approvalFails: true });
    expect(finalText(outcome)).toBe("approval=deny");
  });

  test("approval-twice:CMD asks two approvals in a row and completes with approvals=<d1>,<d2>", async () => {
    const { r, outcome } = await outcomeOf("approval-twice:make", { decisions: ["approve_once", "deny"] });
    expect(finalText(outcome)).toBe("approvals=approve_once,deny");
    expect(r.approvals).toHaveLength(2);
    expect(r.approvals[1]!.command_display).toBe("make");
  });

  test("question:PROMPT asks q1 (options a, b, single select, free text) and completes with the canonical JSON of the answers", async () => {
    const answers: QuestionResolution = { answers: [{ text: "and more", selected_option_ids: ["b"], question_id: "q1" }] };
    const { r, outcome } = await outcomeOf("question:Which one?", { answer: answers });
    expect(r.questions).toEqual([fakeQuestion("Which one?")]);
    expect(finalText(outcome)).toBe('[{"question_id":"q1","selected_option_ids":["b"],"text":"and more"}]');
  });

  test("a question that cannot be answered gives the provider no answers", async () => {
    const { outcome } = await outcomeOf("question:Which?", { answer: "refuse" });
    expect(finalText(outcome)).toBe("[]");
  });

  test("steer: waits for a message and completes with steered=<message>", async () => {
    const hold = Promise.withResolvers<void>();
    const r = run("steer:", { holdRecord: hold.promise });
    // before the task input went out the provider cannot take a message
    await expect(r.handle.sendMessage("too early")).rejects.toMatchObject({ code: "AGENT_TASK_NOT_ACTIVE" });
    hold.resolve();
    // once the task input is out, the provider takes the message
    await poll(
      () =>
        r.handle.sendMessage("turn left").then(
          () => true,
          () => false,
        ),
      5000,
      "the provider taking a message",
    );
    expect(finalText(await r.outcome)).toBe("steered=turn left");
    await expect(r.handle.sendMessage("too late")).rejects.toMatchObject({ code: "AGENT_TASK_NOT_ACTIVE" });
    await finish(r);
  });

  test("wait: runs until cancelled", async () => {
    const r = run("wait:");
    const early = await Promise.race([r.outcome, Bun.sleep(500).then(() => "still running")]);
    expect(early).toBe("still running");
    r.handle.cancel();
    expect(await r.outcome).toEqual({ kind: "cancelled" });
    expect(await r.handle.closeAndWait(5000)).toBe(true);
    expect(checkProcessGroup(r.handle.pgid, r.natives[0]!.startTime!, r.mark)).toBe("gone");
  });

  test("cancel during sleep: ends the run as cancelled, not with its text", async () => {
    const r = run("sleep:20000:never");
    // not synchronization: a cancel ends the run as cancelled at any point; the pause lets it land in the sleep
    await Bun.sleep(300);
    r.handle.cancel();
    expect(await r.outcome).toEqual({ kind: "cancelled" });
    await finish(r);
  });

  test("write:RELPATH:TEXT writes TEXT under its cwd and completes with wrote=RELPATH", async () => {
    const { outcome } = await outcomeOf("write:notes/out.txt:line: one\n");
    expect(finalText(outcome)).toBe("wrote=notes/out.txt");
    expect(readFileSync(join(dir.path, "notes/out.txt"), "utf8")).toBe("line: one\n");
  });

  test("write: never leaves the cwd and writes nothing in a review run", async () => {
    const { outcome: outside } = await outcomeOf("write:../escape.txt:x");
    expect(outside).toMatchObject({ kind: "failed", code: "AGENT_PROVIDER_ERROR" });
    const { outcome: review } = await outcomeOf("write:review.txt:x", { profile: "review" });
    expect(review).toMatchObject({ kind: "failed", code: "AGENT_PROVIDER_ERROR" });
    expect(existsSync(join(dir.path, "review.txt"))).toBe(false);
  });

  test("gate:RELPATH:TEXT runs until the test creates RELPATH under its cwd, then completes with TEXT", async () => {
    const r = run("gate:gates/open-1:opened");
    let settled = false;
    void r.outcome.then(() => (settled = true));
    // the session line comes right before the script starts: from then on the run is held at the gate
    await poll(() => r.natives.some((n) => n.sessionId !== undefined), 10_000, "the session line");
    expect(settled).toBe(false);
    dir.file("gates/open-1", "");
    expect(finalText(await r.outcome)).toBe("opened");
    await finish(r);
  });

  test("gate: a cancel ends a closed gate as cancelled; a path leaving the cwd fails", async () => {
    const r = run("gate:gates/never:never");
    await poll(() => r.natives.some((n) => n.sessionId !== undefined), 10_000, "the session line");
    r.handle.cancel();
    expect(await r.outcome).toEqual({ kind: "cancelled" });
    await finish(r);
    const { outcome } = await outcomeOf("gate:../escape:x");
    expect(outcome).toMatchObject({ kind: "failed", code: "AGENT_PROVIDER_ERROR" });
  });

  test("spawn:SECONDS leaves a grandchild sleep in the group; cancel, then terminate kills it too", async () => {
    const r = run("spawn:60");
    const pgid = r.handle.pgid!;
    await holdsWithin(() => groupMembers(pgid).length >= 2, 5000);
    const members = groupMembers(pgid);
    expect(members.length).toBe(2);
    const grandchild = members.find((p) => p !== pgid)!;
    r.handle.cancel();
    expect(await r.outcome).toEqual({ kind: "cancelled" });
    expect(await r.handle.closeAndWait(5000)).toBe(true);
    // the leader exited; its grandchild keeps the group alive
    expect(checkProcessGroup(pgid, r.natives[0]!.startTime!, r.mark)).toBe("alive");
    expect((await terminateProcessGroup(pgid, r.natives[0]!.startTime!, r.mark, QUICK)).proven).toBe(true);
    const after = readProcStat(grandchild);
    expect(after === null || after.state === "Z" || after.pgrp !== pgid).toBe(true);
    expect(checkProcessGroup(pgid, r.natives[0]!.startTime!, r.mark)).toBe("gone");
  });

  test("fail:MESSAGE fails the run with AGENT_PROVIDER_ERROR and MESSAGE", async () => {
    const { outcome } = await outcomeOf("fail:the build broke");
    expect(outcome).toEqual({ kind: "failed", code: "AGENT_PROVIDER_ERROR", message: "the build broke" });
  });

  test("crash: exits abruptly mid-run and fails the run with AGENT_PROVIDER_ERROR", async () => {
    const { r, outcome } = await outcomeOf("crash:");
    expect(outcome).toMatchObject({ kind: "failed", code: "AGENT_PROVIDER_ERROR" });
    expect(r.natives).toHaveLength(2);
  });

  test("anything else completes with the prompt itself", async () => {
    for (const prompt of ["just do it", "events:many", "repeat:x:y", "Complete:caps"]) {
      const { outcome } = await outcomeOf(prompt);
      expect(finalText(outcome)).toBe(prompt);
    }
  });

  test("the first matching form wins", async () => {
    const { outcome } = await outcomeOf("complete:fail:no");
    expect(finalText(outcome)).toBe("fail:no");
  });
});

describe("docs/runtimes.md fake: continuation", () => {
  test("a continuation resumes the given session and completes with continued:<final text>", async () => {
    const prior = `fake-session-${newTaskId()}`;
    const { r, outcome } = await outcomeOf("approval:ls", { continueFrom: prior, decisions: ["deny"] });
    expect(finalText(outcome)).toBe("continued:approval=deny");
    expect(r.natives[1]).toEqual({ sessionId: prior, turnId: `fake-turn-${r.taskId}` });
    const { outcome: big } = await outcomeOf("repeat:3:ab", { continueFrom: prior });
    expect(finalText(big)).toBe("continued:ababab");
  });

  test("a continuation without a fake-session- id fails AGENT_SESSION_NOT_RESUMABLE and records no session", async () => {
    const { r, outcome } = await outcomeOf("complete:x", { continueFrom: "thread-123" });
    expect(outcome).toMatchObject({ kind: "failed", code: "AGENT_SESSION_NOT_RESUMABLE" });
    expect(r.natives).toHaveLength(1);
  });

  test("native ids never appear in returned text", async () => {
    for (const prompt of ["complete:x", "events:1", "question:q", "approval:a"]) {
      const { outcome } = await outcomeOf(prompt, { answer: { answers: [{ question_id: "q1", selected_option_ids: ["a"] }] } });
      expect(finalText(outcome)).not.toMatch(/fake-(session|turn)-/);
    }
  });
});

describe("docs/runtimes.md process model: the line reader", () => {
  test("a line over the cap fails the run with AGENT_PROVIDER_ERROR; the caller survives and the provider ends", async () => {
    const capped = createFakeAdapter({ lineCap: 4096 });
    const { outcome } = await outcomeOf("repeat:10000:x", { adapter: capped });
    expect(outcome).toMatchObject({ kind: "failed", code: "AGENT_PROVIDER_ERROR", message: "provider sent a line over the line limit" });
    const { outcome: fits } = await outcomeOf("repeat:4000:x", { adapter: capped });
    expect(finalText(fits).length).toBe(4000);
  });

  test("a malformed line fails the run with AGENT_PROVIDER_ERROR", async () => {
    const script = `echo '{"type":"ready","protocol":1}'; read line; echo 'not json'; cat >/dev/null`;
    const garbled = createFakeAdapter({ command: ["sh", "-c", script] });
    const { outcome } = await outcomeOf("complete:x", { adapter: garbled });
    expect(outcome).toMatchObject({ kind: "failed", code: "AGENT_PROVIDER_ERROR" });
  });

  test("a stream that ends before an outcome fails with AGENT_PROVIDER_ERROR and keeps a stderr tail for redaction", async () => {
    const script = `echo '{"type":"ready","protocol":1}'; read line; echo 'went wrong' >&2; sleep 0.2`;
    const quitter = createFakeAdapter({ command: ["sh", "-c", script] });
    const { outcome } = await outcomeOf("complete:x", { adapter: quitter });
    expect(outcome).toMatchObject({ kind: "failed", code: "AGENT_PROVIDER_ERROR", stderrTail: "went wrong\n" });
  });
});
