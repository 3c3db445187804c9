/**
 * `serverfs tasks list|show|events|tail` (docs/cli.md; docs/bridge-rpc.md#methods task.list, task.get,
 * task.events): the real CLI against one real Bridge process, over its socket.
 */
import { Database } from "bun:sqlite";
import { beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fakeBridge } from "../bridge/rpc-wire.ts";
import { bridgeEnv, call, isTerminalTask, rpc, waitForTask } from "../helpers/bridge.ts";
import { poll } from "../helpers/poll.ts";
import { collect, runCli, spawnCli } from "../helpers/process.ts";
import { useBridge } from "../helpers/use-bridge.ts";
import { SERVERFS_SHELL } from "../helpers/workspace.ts";

type Task = Record<string, unknown> & { task_id: string; status: string };
type TaskEvent = { event_id: number; event_type: string; payload: Record<string, unknown> };

const fixture = useBridge();
const { env } = fixture;
/** In submission order: complete, long, failed, events, pending approval. */
let done: Task;
let long: Task;
let failed: Task;
let chatty: Task;
let pending: Task;

const tasks = (...args: string[]) => runCli(["tasks", ...args, "--config", env.configPath]);

const submit = (prompt: string, extra: Record<string, unknown> = {}) => fixture.submit({ prompt, ...extra });

const settle = async (id: string, until = isTerminalTask) => (await waitForTask(env.socketPath, id, until)) as Task;

beforeAll(async () => {
  done = await settle(await submit("complete:first-answer", { correlation_id: "op-1", model: "fake-model", effort: "high" }));
  reportUsage(done.task_id);
  done = await settle(done.task_id);
  long = await settle(await submit("repeat:3000:ab"));
  failed = await settle(await submit("fail:boom"));
  chatty = await settle(await submit("events:3"));
  pending = await settle(await submit("approval:make build"), (t) => t["status"] === "waiting_for_approval");
}, 60_000);

/**
 * What a runtime that reports usage leaves (the fake one reports none): two `task.usage` events of the
 * finished task, written straight into the Bridge's database.
 */
function reportUsage(taskId: string, stateDir = env.stateDir, model = "fake-model"): void {
  const db = new Database(join(stateDir, "state.sqlite3"));
  try {
    db.run("PRAGMA busy_timeout = 5000");
    const insert = db.query("INSERT INTO events (task_id, event_type, payload_json, created_at) VALUES (?, 'task.usage', ?, ?)");
    for (const [input, output, cost] of [
      [100, 20, 0.25],
      [10, 2, 0.5],
    ] as const) {
      const payload = { model, input_tokens: input, cached_input_tokens: 4, output_tokens: output, reasoning_output_tokens: 1, cost_usd: cost };
      insert.run(taskId, JSON.stringify(payload), new Date().toISOString());
    }
  } finally {
    db.close();
  }
}

const lines = (stdout: string) => stdout.split("\n").filter((l) => l !== "");

describe("tasks list (task.list)", () => {
  test("prints an aligned table with a header, newest first, one row per task, no colour off a TTY", async () => {
    const r = await tasks("list");
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain("\x1b[");
    const [header, ...rows] = lines(r.stdout);
    expect(header).toMatch(/^TASK\s+STATUS\s+RUNTIME\s+MODEL\s+WORKDIR\s+PROFILE\s+CREATED\s+TOKENS\s+COST\s+ERROR$/);
    expect(rows.map((l) => l.split(/\s+/)[0])).toEqual([pending, chatty, failed, long, done].map((t) => t.task_id));
    const statusColumn = header!.indexOf("STATUS");
    const createdColumn = header!.indexOf("CREATED");
    for (const row of rows) {
      expect(row[statusColumn - 1]).toBe(" ");
      expect(row.slice(statusColumn)).toMatch(/^[a-z_]+ /);
      expect(row.slice(createdColumn)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/);
    }
    expect(rows[2]).toMatch(/\sfailed\s.*AGENT_PROVIDER_ERROR$/);
    // the model it was given, its tokens in/out and its cost, summed from its usage events
    expect(rows[4]).toMatch(/\sfake\s+fake-model\s+repo\s.*\s110\/22\s+\$0\.75\s*$/);
    expect(rows[0]).toContain("waiting_for_approval");
  });

  test("--status filters by status and --limit bounds the page, saying older tasks were left out", async () => {
    const byStatus = await tasks("list", "--status", "failed");
    expect(byStatus.code).toBe(0);
    expect(
      lines(byStatus.stdout)
        .slice(1)
        .map((l) => l.split(/\s+/)[0]),
    ).toEqual([failed.task_id]);

    const limited = await tasks("list", "--limit", "2");
    expect(limited.code).toBe(0);
    const [, first, second, note] = lines(limited.stdout);
    expect([first, second].map((l) => l!.split(/\s+/)[0])).toEqual([pending.task_id, chatty.task_id]);
    expect(note).toBe(`(older tasks: serverfs tasks list --limit 2 --before ${chatty.task_id})`);
  });

  test("--before ID pages on past any page: following the printed command reaches every task once, then no note", async () => {
    const seen: string[] = [];
    let args = ["--limit", "2"];
    for (let page = 0; page < 5; page++) {
      const r = await tasks("list", ...args);
      expect(r.code, r.stderr).toBe(0);
      const out = lines(r.stdout);
      const note = out.at(-1)!.match(/^\(older tasks: serverfs tasks list (.+)\)$/);
      seen.push(...out.slice(1, note === null ? undefined : -1).map((l) => l.split(/\s+/)[0]!));
      if (note === null) break;
      args = note[1]!.split(" ");
    }
    expect(seen).toEqual([pending, chatty, failed, long, done].map((t) => t.task_id));

    // --json's next_before_task_id is the cursor --before takes; the filter goes with it
    const json = JSON.parse((await tasks("list", "--limit", "1", "--before", chatty.task_id, "--json")).stdout) as {
      tasks: Task[];
      next_before_task_id: string | null;
    };
    expect(json.tasks.map((t) => t.task_id)).toEqual([failed.task_id]);
    expect(json.next_before_task_id).toBe(failed.task_id);
    const filtered = await tasks("list", "--status", "succeeded", "--limit", "1", "--before", chatty.task_id);
    expect(lines(filtered.stdout).slice(1)).toEqual([
      expect.stringMatching(new RegExp(`^${long.task_id}\\s`)),
      `(older tasks: serverfs tasks list --status succeeded --limit 1 --before ${long.task_id})`,
    ]);
    const last = await tasks("list", "--before", done.task_id);
    expect(last.stdout).toBe(`no tasks older than ${done.task_id}\n`);
  });

  test("--before a task that does not exist is AGENT_TASK_NOT_FOUND; one that is no task id, or with another command, a usage error", async () => {
    const unknown = await tasks("list", "--before", "agt_000000000000000000000000");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toStartWith("serverfs: AGENT_TASK_NOT_FOUND: ");
    for (const args of [
      ["list", "--before", "01J9Z8X5T2M4N6P8Q0R2S4T6V8"],
      ["show", done.task_id, "--before", done.task_id],
    ]) {
      const r = await tasks(...args);
      expect(r.code).toBe(2);
      expect(r.stderr).toStartWith("serverfs: usage error: ");
    }
  });

  test("--json is one JSON document {tasks, next_before_task_id}, newest first, without final responses", async () => {
    const r = await tasks("list", "--json");
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { tasks: Task[]; next_before_task_id: string | null };
    expect(Object.keys(doc).sort()).toEqual(["next_before_task_id", "tasks"]);
    expect(doc.next_before_task_id).toBeNull();
    expect(doc.tasks.map((t) => t.task_id)).toEqual([pending, chatty, failed, long, done].map((t) => t.task_id));
    for (const t of doc.tasks) expect(t).not.toHaveProperty("final_response");
    const { final_response: _, ...expected } = done;
    expect(doc.tasks[4]).toEqual(expected);
    expect(r.stdout).not.toContain("first-answer");
  });

  test("an unknown --status or an out-of-range --limit is a usage error (exit 2)", async () => {
    for (const args of [
      ["--status", "finished"],
      ["--limit", "0"],
      ["--limit", "501"],
      ["--limit", "ten"],
    ]) {
      const r = await tasks("list", ...args);
      expect(r.code).toBe(2);
      expect(r.stderr).toStartWith("serverfs: usage error: ");
      expect(r.stdout).toBe("");
    }
  });
});

describe("tasks --help", () => {
  test("shows task ids as they are: agt_ and 24 lowercase hex digits, in the note and the example", async () => {
    const r = await runCli(["tasks", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("ID is a task id as `tasks list` shows it: agt_ followed by 24 lowercase hex digits");
    expect(r.stdout).toContain("--before ID");
    const ids = [...r.stdout.matchAll(/agt_\w+/g)].map((m) => m[0]);
    expect(ids.length).toBeGreaterThanOrEqual(2);
    for (const id of ids) expect(id).toMatch(/^agt_[0-9a-f]{24}$/);
    expect(r.stdout).toMatch(/^example: serverfs tasks tail agt_[0-9a-f]{24}$/m);
  });
});

describe("tasks show (task.get)", () => {
  const field = (stdout: string, name: string) =>
    lines(stdout)
      .find((l) => l.startsWith(`${name} `))
      ?.slice(name.length)
      .trim();

  test("shows status, timestamps, runtime, workdir, result storage, size and sha, manifest sha and a response preview", async () => {
    const r = await tasks("show", done.task_id);
    expect(r.code).toBe(0);
    const result = done["result"] as { size_bytes: number; sha256: string };
    expect(field(r.stdout, "task")).toBe(done.task_id);
    expect(field(r.stdout, "status")).toBe("succeeded");
    expect(field(r.stdout, "runtime")).toBe("fake");
    expect(field(r.stdout, "workdir")).toBe("repo (slot 1), start directory .");
    expect(field(r.stdout, "created")).toBe(done["created_at"] as string);
    expect(field(r.stdout, "completed")).toBe(done["completed_at"] as string);
    expect(field(r.stdout, "correlation")).toBe("op-1");
    expect(field(r.stdout, "result")).toBe(`inline, ${result.size_bytes} bytes, sha256 ${result.sha256}`);
    expect(field(r.stdout, "manifest")).toBe(`sha256 ${done["manifest_sha256"]}`);
    expect(field(r.stdout, "model")).toBe("fake-model, effort high");
    expect(field(r.stdout, "usage")).toBe("110 in (8 cached), 22 out (2 reasoning), $0.75");
    expect(r.stdout).toContain("response\n  first-answer\n");
  });

  test("a long final response is shown only as a preview of at most 1 KiB", async () => {
    const r = await tasks("show", long.task_id);
    expect(r.code).toBe(0);
    const preview = lines(r.stdout).find((l) => l.startsWith("  ab"))!;
    expect(preview.trim()).toBe("ab".repeat(512));
    expect(r.stdout).toContain("(preview; the whole result is 6000 bytes)");
    expect(r.stdout.length).toBeLessThan(2500);
  });

  test("a failed task shows its error code and message; a waiting one its pending request", async () => {
    const f = await tasks("show", failed.task_id);
    expect(field(f.stdout, "error")).toStartWith("AGENT_PROVIDER_ERROR");
    expect(f.stdout).not.toContain("response");

    const p = await tasks("show", pending.task_id);
    const request = pending["pending_request"] as { request_id: string; expires_at: string };
    expect(field(p.stdout, "pending")).toBe(`approval ${request.request_id} (pending, expires ${request.expires_at}): Run a command: make build`);
    expect(p.stdout).toEndWith("request\n  Command: make build\n");
  });

  test("--json is the task object of task.get, its final response cut to the preview", async () => {
    const whole = await tasks("show", done.task_id, "--json");
    expect(whole.code).toBe(0);
    expect(JSON.parse(whole.stdout)).toEqual({ ...done, final_response_preview_cut: false });

    const cut = JSON.parse((await tasks("show", long.task_id, "--json")).stdout) as Task;
    expect(cut["final_response"]).toBe("ab".repeat(512));
    expect(cut["final_response_preview_cut"]).toBe(true);
    expect(cut["result"]).toEqual(long["result"]);
  });

  test("an unknown or malformed task id exits 1 with AGENT_TASK_NOT_FOUND on stderr", async () => {
    for (const id of ["agt_000000000000000000000000", "not-a-task"]) {
      const r = await tasks("show", id);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^serverfs: AGENT_TASK_NOT_FOUND: .+\n$/);
      expect(r.stdout).toBe("");
    }
  });

  test("a missing task id is a usage error (exit 2)", async () => {
    const r = await tasks("show");
    expect(r.code).toBe(2);
    expect(r.stderr).toStartWith("serverfs: usage error: tasks show needs a task id");
  });
});

describe("tasks events (task.events)", () => {
  const rpcEvents = async (id: string, after = 0) =>
    (await call<{ events: TaskEvent[] }>(env.socketPath, "task.events", { task_id: id, after_event_id: after })).events;

  test("prints every event in order, one aligned row each, with a short payload summary", async () => {
    const expected = await rpcEvents(chatty.task_id);
    const r = await tasks("events", chatty.task_id);
    expect(r.code).toBe(0);
    const [header, ...rows] = lines(r.stdout);
    expect(header).toMatch(/^#\s+EVENT\s+AT\s+TYPE\s+DETAIL$/);
    // #n counts within the task; EVENT is the global id --after takes
    expect(rows.map((l) => l.split(/\s+/)[0])).toEqual(expected.map((_, i) => `#${i + 1}`));
    expect(rows.map((l) => l.split(/\s+/)[1])).toEqual(expected.map((e) => String(e.event_id)));
    expect(rows.map((l) => l.split(/\s+/)[3])).toEqual(["task.started", "agent.message", "agent.message", "agent.message", "task.completed"]);
    // an event's text is shown as its text
    expect(rows[1]).toEndWith('"event 1"');
    const typeColumn = header!.indexOf("TYPE");
    for (const row of rows) expect(row.slice(typeColumn)).toMatch(/^(task|agent)\./);
  });

  test("--after N keeps counting within the task", async () => {
    const all = await rpcEvents(chatty.task_id);
    const r = await tasks("events", chatty.task_id, "--after", String(all[1]!.event_id));
    const rows = lines(r.stdout).slice(1);
    expect(rows.map((l) => l.split(/\s+/)[0])).toEqual(["#3", "#4", "#5"]);
  });

  test("--after N starts after that event id; --json is {correlation_id, events, next_after_event_id}", async () => {
    const all = await rpcEvents(chatty.task_id);
    const cursor = all[1]!.event_id;
    const r = await tasks("events", chatty.task_id, "--after", String(cursor), "--json");
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { correlation_id: string | null; events: TaskEvent[]; next_after_event_id: number };
    expect(doc.correlation_id).toBeNull();
    expect(doc.events).toEqual(all.slice(2));
    expect(doc.next_after_event_id).toBe(all[all.length - 1]!.event_id);
  });

  test("an unknown task exits 1 with AGENT_TASK_NOT_FOUND", async () => {
    const r = await tasks("events", "agt_ffffffffffffffffffffffff");
    expect(r.code).toBe(1);
    expect(r.stderr).toStartWith("serverfs: AGENT_TASK_NOT_FOUND: ");
  });
});

describe("tasks tail (task.events with wait_ms)", () => {
  /**
   * The task runs until the tail has printed its first event: the gate (docs/runtimes.md#fake) opens
   * only then, so the tail has to follow the run to its end, not just read it back.
   */
  async function tailWhileRunning(...flags: string[]) {
    const gate = `tail-gate-${flags.join("")}`;
    const id = await submit(`gate:${gate}:done`);
    const proc = spawnCli(["tasks", "tail", id, "--config", env.configPath, ...flags]);
    const out = collect(proc.stdout);
    await poll(
      () => out.text().includes("task.started"),
      20_000,
      () => `the tail's first event (it printed ${JSON.stringify(out.text())})`,
    );
    expect((await call<Task>(env.socketPath, "task.get", { task_id: id })).status).toBe("running");
    writeFileSync(join(env.workspace, gate), "");
    const [stdout, code] = await Promise.all([out.ended, proc.exited]);
    return { id, stdout, code };
  }

  test("follows a running task live to its end, one line per event in order, then its final status", async () => {
    const { id, stdout, code } = await tailWhileRunning();
    expect(code).toBe(0);
    const [header, ...out] = lines(stdout);
    // the same columns as `tasks events`
    expect(header).toMatch(/^#\s+EVENT\s+AT\s+TYPE\s+DETAIL$/);
    const events = (await call<{ events: TaskEvent[] }>(env.socketPath, "task.events", { task_id: id })).events;
    expect(out.slice(0, -1).map((l) => l.split(/\s+/)[1])).toEqual(events.map((e) => String(e.event_id)));
    expect(out.slice(0, -1).map((l) => l.split(/\s+/)[3])).toEqual(["task.started", "task.completed"]);
    expect(header!.indexOf("TYPE")).toBe(out[0]!.indexOf("task.started"));
    expect(out.at(-1)).toBe(`task ${id} ended succeeded after 2 events`);
  }, 30_000);

  test("--json gives one JSON object per line: each event envelope, then {task_id, status, error_code}", async () => {
    const { id, stdout, code } = await tailWhileRunning("--json");
    expect(code).toBe(0);
    const docs = lines(stdout).map((l) => JSON.parse(l) as Record<string, unknown>);
    const events = (await call<{ events: TaskEvent[] }>(env.socketPath, "task.events", { task_id: id })).events;
    expect(docs.slice(0, -1)).toEqual(events);
    expect(docs.at(-1)).toEqual({ task_id: id, status: "succeeded", error_code: null });
  }, 30_000);

  test("a task that has already ended prints its events and final status at once", async () => {
    const r = await tasks("tail", failed.task_id);
    expect(r.code).toBe(0);
    expect(lines(r.stdout).at(-1)).toMatch(new RegExp(`^task ${failed.task_id} ended failed: AGENT_PROVIDER_ERROR after \\d+ events$`));
    expect(r.stdout).toContain("task.failed");
  });

  test("an unknown task exits 1 with AGENT_TASK_NOT_FOUND", async () => {
    const r = await tasks("tail", "agt_ffffffffffffffffffffffff");
    expect(r.code).toBe(1);
    expect(r.stderr).toStartWith("serverfs: AGENT_TASK_NOT_FOUND: ");
  });
});

describe("tasks list with large results", () => {
  test("lists every task even when one task.list answer would exceed 1 MiB", async () => {
    // six inline results of 200,000 bytes each: more than one response line can carry
    const big: string[] = [];
    for (let i = 0; i < 6; i++) big.push((await settle(await submit(`repeat:1000:${String(i).repeat(200)}`))).task_id);
    const tooLarge = await rpc(env.socketPath, "task.list", { limit: 6 });
    expect(tooLarge.error?.code).toBe("RESPONSE_TOO_LARGE");

    const r = await tasks("list", "--limit", "6", "--json");
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { tasks: Task[]; next_before_task_id: string | null };
    expect(doc.tasks.map((t) => t.task_id)).toEqual(big.reverse());
    expect(doc.next_before_task_id).toBe(doc.tasks[5]!.task_id);
  }, 30_000);
});

describe("tasks without a Bridge", () => {
  test("exits 1 with AGENT_BRIDGE_UNAVAILABLE when nothing answers on the socket", async () => {
    const idle = bridgeEnv();
    try {
      const r = await runCli(["tasks", "list", "--config", idle.configPath]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^serverfs: AGENT_BRIDGE_UNAVAILABLE: .+\n$/);
      expect(r.stderr).toContain("is `serverfs bridge` running as this user? `serverfs doctor` checks the setup");
      expect(r.stderr).not.toContain(idle.dir.path);
    } finally {
      idle.dir.remove();
    }
  });
});

describe("what tasks show and tail tell in each state", () => {
  const ownFixture = useBridge();
  const own = ownFixture.env;
  const ownTasks = (...args: string[]) => runCli(["tasks", ...args, "--config", own.configPath]);
  const resultLine = async (id: string) =>
    lines((await ownTasks("show", id)).stdout)
      .find((l) => l.startsWith("result "))
      ?.slice(7)
      .trim();

  const ownSubmit = (prompt: string) => ownFixture.submit({ prompt });

  test("result: cancelled, failed, running and spooled tasks each say what is true", async () => {
    const running = await ownSubmit("wait:");
    await waitForTask(own.socketPath, running, (t) => t["status"] === "running");
    expect(await resultLine(running)).toBe("none yet: the task has not ended");
    await call(own.socketPath, "task.cancel", { task_id: running });
    await waitForTask(own.socketPath, running, isTerminalTask);
    expect(await resultLine(running)).toBe("none: the task was cancelled before a final response");
    const broken = await ownSubmit("fail:boom");
    await waitForTask(own.socketPath, broken, isTerminalTask);
    expect(await resultLine(broken)).toBe("none: the task failed (AGENT_PROVIDER_ERROR)");
    const big = await ownSubmit("repeat:200000:ab");
    await waitForTask(own.socketPath, big, isTerminalTask);
    expect(await resultLine(big)).toMatch(/^spooled, retrievable with read_agent_task_result, 400000 bytes, sha256 [0-9a-f]{64}$/);
  }, 30_000);

  test("what an agent, a runtime or a client wrote cannot steer the terminal: a response, an error, a model name, an event's text", async () => {
    // a clipboard write (OSC 52), a bell, a screen clear, a C1 CSI, a right-to-left override, DEL, and a carriage return before a forged field
    const steer = "\x1b]52;c;aGk=\x07\x1b[2J\u009b31m\u202e\x7f\rstatus     forged";
    const escaped = "\\u001b]52;c;aGk=\\u0007\\u001b[2J\\u009b31m\\u202e\\u007f\\rstatus     forged";
    const answered = await ownSubmit(`complete:fine\n${steer}`);
    const broken = await ownSubmit(`fail:${steer}`);
    const talked = await ownSubmit(`big:1:${steer}`);
    for (const id of [answered, broken, talked]) await waitForTask(own.socketPath, id, isTerminalTask);
    reportUsage(answered, own.stateDir, steer);

    const shown = await ownTasks("show", answered);
    const failedShown = await ownTasks("show", broken);
    const listed = await ownTasks("list");
    const events = await ownTasks("events", talked);
    for (const r of [shown, failedShown, listed, events]) {
      expect(r.code, r.stderr).toBe(0);
      // a tab and the command's own line ends are all that is left of the controls
      expect(r.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/);
    }
    expect(shown.stdout).toContain(`response\n  fine\n  ${escaped}\n`);
    expect(lines(shown.stdout).filter((l) => l.startsWith("status"))).toEqual([expect.stringMatching(/^status +succeeded$/)]);
    expect(lines(failedShown.stdout).find((l) => l.startsWith("error "))).toContain(escaped);
    expect(lines(listed.stdout).find((l) => l.startsWith(answered))).toContain(escaped);
    expect(lines(events.stdout).find((l) => l.includes("agent.message"))).toContain("\\u009b31m\\u202e\\u007f");
  });

  test("tail on a terminal shows a waiting line while nothing arrives, erased by the next line", async () => {
    const id = await ownSubmit("gate:waiting-gate:done");
    // script(1) gives the tail a real terminal
    const proc = Bun.spawn(["script", "-qec", `${SERVERFS_SHELL} tasks tail ${id} --config ${own.configPath}`, "/dev/null"], {
      env: { ...process.env, NO_COLOR: "1" },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    const out = collect(proc.stdout);
    // the run is held at its gate until the tail shows that it waits; then its end is the next line
    await poll(
      () => out.text().includes("… waiting for events (the task is running)"),
      20_000,
      () => `the waiting line (the tail printed ${JSON.stringify(out.text())})`,
    );
    writeFileSync(join(own.workspace, "waiting-gate"), "");
    const [text, code] = await Promise.all([out.ended, proc.exited]);
    expect(code).toBe(0);
    const waiting = text.lastIndexOf("… waiting for events (the task is running)");
    expect(text.indexOf("\r\x1b[K", waiting)).toBeGreaterThan(waiting);
    expect(text.slice(waiting)).toContain("task.completed");
    expect(text).toMatch(new RegExp(`task ${id} ended succeeded after \\d+ events`));
  }, 30_000);

  test("tail says where the story stops when the Bridge goes away, then exits 1", async () => {
    const id = await ownSubmit("wait:");
    await waitForTask(own.socketPath, id, (t) => t["status"] === "running");
    const proc = spawnCli(["tasks", "tail", id, "--config", own.configPath]);
    const stderr = new Response(proc.stderr).text();
    const reader = proc.stdout.getReader();
    let stdout = "";
    const more = async () => {
      const { value, done } = await reader.read();
      if (value) stdout += new TextDecoder().decode(value);
      return done;
    };
    // the tail is following once its first event line is out; then the Bridge stops
    await poll(async () => (await more()) || /task\.started/.test(stdout), 10_000, "the tail's first event");
    await ownFixture.bridge().stop();
    while (!(await more()));
    expect(await proc.exited).toBe(1);
    const out = lines(stdout);
    expect(out.at(-1), `${stdout}\n${await stderr}`).toMatch(
      new RegExp(`^task ${id} was (running|interrupted) when the Bridge went away \\(last event #\\d+\\)$`),
    );
    expect(await stderr).toStartWith("serverfs: AGENT_BRIDGE_UNAVAILABLE: ");
    await ownFixture.restart();
  }, 40_000);

  test("a Bridge that answers BRIDGE_CLOSED (shutting down) has gone away for the tail too", async () => {
    // A connection opened just before the Bridge closes its listener gets BRIDGE_CLOSED, a race a
    // loaded machine wins now and then; a fake Bridge on the socket answers so every time: the task and
    // its first event as the real Bridge gave them, then BRIDGE_CLOSED for the tail's next request.
    const id = await ownSubmit("wait:");
    const task = await waitForTask(own.socketPath, id, (t) => t["status"] === "running");
    const page = await call<{ events: TaskEvent[] }>(own.socketPath, "task.events", { task_id: id });
    await call(own.socketPath, "task.cancel", { task_id: id });
    const closing = bridgeEnv();
    mkdirSync(dirname(closing.socketPath), { recursive: true });
    let eventsAsked = 0;
    const fake = await fakeBridge(closing.socketPath, (line) => {
      const req = JSON.parse(line) as { request_id: string; method: string };
      const answer = (body: Record<string, unknown>) => ({ bytes: `${JSON.stringify({ request_id: req.request_id, ...body })}\n`, close: true });
      if (req.method === "task.get") return answer({ ok: true, result: task });
      if (req.method === "task.events" && eventsAsked++ === 0) return answer({ ok: true, result: page });
      return answer({ ok: false, error: { code: "BRIDGE_CLOSED", message: "the Bridge is shutting down" } });
    });
    try {
      const r = await runCli(["tasks", "tail", id, "--config", closing.configPath]);
      expect(r.code, r.stderr).toBe(1);
      expect(lines(r.stdout).at(-1), r.stderr).toBe(`task ${id} was running when the Bridge went away (last event #${page.events.length})`);
      expect(r.stderr).toStartWith("serverfs: AGENT_BRIDGE_UNAVAILABLE: ");
    } finally {
      await fake.close();
      closing.dir.remove();
    }
  }, 30_000);
});

describe("tasks show: the pending request in full", () => {
  const requestFixture = useBridge();
  const renv = requestFixture.env;
  const show = (id: string) => runCli(["tasks", "show", id, "--config", renv.configPath]);
  const waiting = async (prompt: string) => {
    const id = await requestFixture.submit({ prompt });
    return (await requestFixture.waitFor(id, (t) => String(t["status"]).startsWith("waiting_for_"))) as Task;
  };
  const requestOf = (t: Task) => t["pending_request"] as { request_id: string; expires_at: string };
  const pendingLine = (stdout: string) =>
    lines(stdout)
      .find((l) => l.startsWith("pending "))
      ?.slice("pending ".length)
      .trim();
  /** What `show` prints under `request`, up to the end. */
  const requestBlock = (stdout: string) => stdout.slice(stdout.indexOf("\nrequest\n") + "\nrequest\n".length);

  /**
   * What Codex's requests carry and the fake runtime never asks (a command's directory and sandbox, an
   * MCP tool, permissions, renames): the pending approval's stored payload, rewritten in the Bridge's
   * database as the Bridge would have stored it.
   */
  function storePayload(requestId: string, payload: Record<string, unknown>): void {
    const db = new Database(join(renv.stateDir, "state.sqlite3"));
    try {
      db.run("PRAGMA busy_timeout = 5000");
      db.query("UPDATE pending_requests SET payload_json = ? WHERE request_id = ?").run(JSON.stringify(payload), requestId);
    } finally {
      db.close();
    }
  }

  test("a file change: each path with its kind, the diff behind a gutter; nothing in it can forge a line or steer the terminal", async () => {
    writeFileSync(join(renv.workspace, "notes.txt"), "old line\n");
    const task = await waiting("file-change:notes.txt:new line\nstatus     succeeded\n\x1b[2Jred\rpending forged\n");
    const r = await show(task.task_id);
    expect(r.code, r.stderr).toBe(0);
    const request = requestOf(task);
    expect(pendingLine(r.stdout)).toBe(`approval ${request.request_id} (pending, expires ${request.expires_at}): Apply file changes: update notes.txt`);
    expect(requestBlock(r.stdout)).toBe(
      [
        "  Reason: the fake provider wants to write one file",
        "  Files (1):",
        "    update notes.txt",
        "  diff of notes.txt:",
        "  │ --- a/notes.txt",
        "  │ +++ b/notes.txt",
        "  │ @@ -1 +1,3 @@",
        "  │ -old line",
        "  │ +new line",
        "  │ +status     succeeded",
        "  │ +\\u001b[2Jred\\rpending forged",
        "",
      ].join("\n"),
    );
    // one status line, the real one; no escape or carriage return reaches the terminal
    expect(lines(r.stdout).filter((l) => l.startsWith("status"))).toEqual([expect.stringMatching(/^status +waiting_for_approval$/)]);
    expect(r.stdout).not.toMatch(/[\x1b\r]/);
  });

  test("a withheld diff is said to be withheld and nothing of it is shown", async () => {
    const task = await waiting("file-change:.env:TOKEN=hunter2");
    const r = await show(task.task_id);
    expect(requestBlock(r.stdout)).toContain("  Files (1):\n    update .env\n  (the diff of .env is withheld)\n");
    expect(r.stdout).not.toContain("hunter2");
  });

  test("a question: each question with its id, its options with their ids, and how it is answered", async () => {
    const task = await waiting("question:Which build?");
    const r = await show(task.task_id);
    const request = requestOf(task);
    expect(pendingLine(r.stdout)).toBe(`question ${request.request_id} (pending, expires ${request.expires_at}): Which build?`);
    expect(requestBlock(r.stdout)).toBe("  Question q1: Which build?\n    a: a\n    b: b\n    answer with one option or free text\n");
  });

  test("a command: the command, how and where it runs, outside the sandbox, the reason; an MCP tool; permissions; renames; a long diff", async () => {
    const task = await waiting("approval:make build");
    const id = requestOf(task).request_id;
    const approval = { available_decisions: [], summary: "a summary\nstatus forged" };

    storePayload(id, {
      ...approval,
      category: "command",
      title: "Run a command",
      command: "make build",
      command_display: "/bin/bash -lc 'make build'",
      relative_cwd: "src",
      outside_sandbox: true,
      reason: "it needs the network",
    });
    const command = await show(task.task_id);
    expect(pendingLine(command.stdout)).toEndWith(": a summary\\nstatus forged (outside the sandbox)");
    expect(requestBlock(command.stdout)).toBe(
      [
        "  Command: make build",
        "  Runs as: /bin/bash -lc 'make build'",
        "  In: src",
        "  It runs outside the sandbox: once approved, nothing confines it to the workdir.",
        "  Reason: it needs the network",
        "",
      ].join("\n"),
    );

    storePayload(id, { ...approval, category: "command", title: "Run a command", command: "make", relative_cwd: null });
    expect(requestBlock((await show(task.task_id)).stdout)).toContain("  In: an unknown directory (the runtime could not say for certain)\n");

    storePayload(id, {
      ...approval,
      category: "mcp_tool",
      title: "Use an MCP tool",
      server: "notes",
      tool: "write_note",
      tool_input: { name: "n.txt", body: "x".repeat(5000) },
    });
    const tool = requestBlock((await show(task.task_id)).stdout);
    expect(tool).toStartWith('  MCP server: notes\n  Tool: write_note\n  Tool input: {"name":"n.txt","body":"xxx');
    expect(Buffer.byteLength(tool.split("\n")[2]!)).toBeLessThanOrEqual(2 + 2048 + 3);
    expect(tool.split("\n")[2]).toEndWith("x…");

    storePayload(id, {
      ...approval,
      category: "provider_permission",
      title: "Grant additional permissions",
      requested_permissions: [
        { permission_id: "p1", kind: "network", details: {} },
        { permission_id: "p2", kind: "file_system", details: { write: ["src"] } },
      ],
    });
    expect(requestBlock((await show(task.task_id)).stdout)).toBe('  Permission 1: network {}\n  Permission 2: file_system {"write":["src"]}\n');

    const longDiff = ["--- a/big.txt", "+++ b/big.txt", "@@ -0,0 +1,300 @@", ...Array.from({ length: 300 }, (_, i) => `+line ${i}`)].join("\n");
    storePayload(id, {
      ...approval,
      category: "file_change",
      title: "Apply file changes",
      file_changes: [
        { path: "a.txt", kind: "rename", new_path: "docs/a.txt", diff: null },
        { path: "big.txt", kind: "add", diff: longDiff, truncated: true },
        { path: "c.txt", kind: "update", diff: null, truncated: true },
      ],
    });
    const files = lines(requestBlock((await show(task.task_id)).stdout));
    expect(files.slice(0, 5)).toEqual(["  Files (3):", "    rename a.txt → docs/a.txt", "    add big.txt", "    update c.txt", "  diff of big.txt:"]);
    const diff = files.filter((l) => l.startsWith("  │ "));
    expect(diff.length).toBe(201);
    expect(diff.at(-2)).toBe("  │ +line 196");
    expect(diff.at(-1)).toBe("  │ … 103 more lines (--json has the whole diff)");
    expect(files.slice(-2)).toEqual([
      "  (the Bridge cut this diff to its bound)",
      "  (the diff of c.txt is left out: the request's diffs reached their bound)",
    ]);
  }, 30_000);
});
