/**
 * `serverfs demo`: the embedded default (docs/configuration.md). It lays out a temporary workspace and state,
 * starts a Bridge with the scripted `fake` runtime, drives `serverfs mcp` over stdio with the SDK's
 * own client as any MCP client would, and prints a readable transcript. Exits 0 only when every
 * step held. Nothing is left behind on any exit: a failed step, a reader that went away
 * (`serverfs demo | head`), SIGINT, SIGTERM or SIGHUP all stop its Bridge and MCP server and remove
 * its temporary directory before the last line.
 */
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CallToolResult, Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { paint, writeStdout } from "../operator/output.ts";
import { selfCommand } from "../self-command.ts";

const bold = (s: string) => paint("bold", s);
const dim = (s: string) => paint("dim", s);
const green = (s: string) => paint("green", s);
const red = (s: string) => paint("red", s);

/** Why the demo stopped before its end: its reader went away, or a signal asked it to. */
class DemoAborted extends Error {}

const write = (s: string) => {
  if (!writeStdout(s)) throw new DemoAborted("its output was closed");
};
const out = (s = "") => write(`${s}\n`);

const SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
/** The exit status of a run a signal ended, as a shell reports it (128 + the signal's number). */
const SIGNAL_EXIT: Record<(typeof SIGNALS)[number], number> = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 };

/**
 * A promise that rejects with DemoAborted on the first signal: every step races it, so the run stops
 * at once and its `finally` cleans up. The handlers replace Bun's default (exit without cleanup).
 */
function abortOnSignals() {
  let received: (typeof SIGNALS)[number] | null = null;
  let reject: (e: Error) => void = () => undefined;
  const aborted = new Promise<never>((_, r) => {
    reject = r;
  });
  aborted.catch(() => undefined);
  const handlers = SIGNALS.map((sig) => {
    const handler = () => {
      received ??= sig;
      reject(new DemoAborted(`${sig} received`));
    };
    process.on(sig, handler);
    return [sig, handler] as const;
  });
  return {
    aborted,
    signal: () => received,
    dispose: () => {
      for (const [sig, handler] of handlers) process.off(sig, handler);
    },
  };
}

interface Step {
  title: string;
  run: () => Promise<string[]>;
}

class DemoFailure extends Error {}

function expect(cond: unknown, what: string): asserts cond {
  if (!cond) throw new DemoFailure(what);
}

function text(r: CallToolResult): string {
  return (r.content[0] as { text?: string } | undefined)?.text ?? "";
}

function ok<T = Record<string, unknown>>(r: CallToolResult, what: string): T {
  expect(!r.isError, `${what} failed: ${text(r)}`);
  return r.structuredContent as T;
}

function layout(root: string) {
  const ws = join(root, "workspace");
  mkdirSync(join(ws, "src"), { recursive: true });
  mkdirSync(join(ws, "notes"));
  writeFileSync(join(ws, "README.md"), "# Demo project\n\nA tiny workspace that ServerFS exposes to an MCP client.\n");
  writeFileSync(join(ws, "src", "app.ts"), 'export function greet(name: string): string {\n  return "Hello, " + name; // TODO: use a template\n}\n');
  writeFileSync(join(ws, "notes", "todo.md"), "- TODO: write more tests\n- ship it\n");
  writeFileSync(join(ws, ".env"), "SECRET=never-shown\n");
  const config = join(root, "serverfs.toml");
  writeFileSync(
    config,
    [
      "[bridge]",
      "enabled = true",
      "enable_fake_runtime = true",
      `socket_path = ${JSON.stringify(join(root, "run", "bridge.sock"))}`,
      `state_dir = ${JSON.stringify(join(root, "state"))}`,
      `lock_dir = ${JSON.stringify(join(root, "locks"))}`,
      "",
      "[[workdirs]]",
      "slot = 1",
      'alias = "demo"',
      `path = ${JSON.stringify(ws)}`,
      'description = "the demo workspace"',
      "read_only = false",
      'agent_mode = "workspace-write"',
      'agent_runtimes = ["fake"]',
      "",
    ].join("\n"),
  );
  return { ws, config };
}

async function startBridge(config: string) {
  const [cmd, ...args] = selfCommand("bridge", "--config", config);
  const proc = Bun.spawn([cmd!, ...args], { stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  const reader = proc.stderr.getReader();
  let buf = "";
  const deadline = Date.now() + 20_000;
  while (!buf.includes('"event":"bridge_started"')) {
    if (Date.now() > deadline) throw new DemoFailure("the Bridge did not start");
    const { value, done } = await reader.read();
    if (done) throw new DemoFailure("the Bridge exited during startup");
    buf += new TextDecoder().decode(value);
  }
  // keep draining so the Bridge never blocks on a full pipe
  void (async () => {
    for (;;) if ((await reader.read()).done) break;
  })();
  return proc;
}

export async function runDemo(): Promise<number> {
  const root = mkdtempSync(join(tmpdir(), "serverfs-demo-"));
  let bridge: Awaited<ReturnType<typeof startBridge>> | null = null;
  let client: Client | null = null;
  const started = performance.now();
  const abort = abortOnSignals();
  const raced = <T>(p: Promise<T>) => Promise.race([p, abort.aborted]);
  try {
    out(bold("ServerFS demo"));
    out(dim("A temporary workspace, a Bridge with the scripted fake runtime, and `serverfs mcp` driven over stdio."));
    out();
    const { config } = layout(root);
    const starting = startBridge(config);
    // a signal during startup still leaves a Bridge to stop
    starting.then(
      (b) => {
        bridge = b;
      },
      () => undefined,
    );
    bridge = await raced(starting);
    const [cmd, ...args] = selfCommand("mcp", "--config", config);
    client = new Client({ name: "serverfs-demo", version: "1.0.0" });
    await raced(client.connect(new StdioClientTransport({ command: cmd!, args, stderr: "ignore" })));
    const c = client;
    const call = (name: string, a: Record<string, unknown> = {}) => c.callTool({ name, arguments: a });

    const waitFor = async (taskId: string, until: (t: Record<string, unknown>) => boolean) => {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const t = ok(await call("get_agent_task", { task_id: taskId }), "get_agent_task");
        if (until(t)) return t;
        expect(Date.now() < deadline, `task stuck in ${String(t["status"])}`);
        await call("read_agent_task_events", { task_id: taskId, after_event_id: 0, limit: 1, wait_ms: 200 });
      }
    };

    const steps: Step[] = [
      {
        title: "Connect and list the tools",
        run: async () => {
          const tools = (await c.listTools()).tools.map((t) => t.name);
          expect(tools.length === 20, `expected 20 tools, got ${tools.length}`);
          return [`${c.getServerVersion()?.name} ${c.getServerVersion()?.version}: ${tools.length} tools`, dim(tools.join(", "))];
        },
      },
      {
        title: "list_workdirs",
        run: async () => {
          const r = ok<{ workdirs: { alias: string; access: string; agent_mode: string }[] }>(await call("list_workdirs"), "list_workdirs");
          return r.workdirs.map((w) => `${w.alias}: ${w.access}, agent mode ${w.agent_mode}`);
        },
      },
      {
        title: "read_text_file README.md",
        run: async () => {
          const r = ok<{ content: string; revision: string; end_line: number }>(await call("read_text_file", { workdir: "demo", path: "README.md" }), "read");
          return [`${r.end_line} lines, revision ${r.revision}`, dim(r.content.trim().split("\n")[0] ?? "")];
        },
      },
      {
        title: 'search_text "TODO"',
        run: async () => {
          const r = ok<{ matches: { path: string; line: number; text: string }[] }>(await call("search_text", { workdir: "demo", query: "TODO" }), "search");
          expect(r.matches.length === 2, "expected two hits");
          return r.matches.map((m) => `${m.path}:${m.line}  ${m.text.trim()}`);
        },
      },
      {
        title: "Confinement and policy refuse escapes and secrets",
        run: async () => {
          const escaping = await call("read_text_file", { workdir: "demo", path: "../../etc/passwd" });
          const secret = await call("read_text_file", { workdir: "demo", path: ".env" });
          expect(text(escaping).startsWith("PATH_OUTSIDE_WORKDIR"), "escape was not refused");
          expect(text(secret).startsWith("HIDDEN_PATH_NOT_ALLOWED") || text(secret).startsWith("DENIED_PATH"), ".env was not refused");
          return [`../../etc/passwd → ${text(escaping)}`, `.env → ${text(secret)}`];
        },
      },
      {
        title: "edit_text_file with the revision from stat_file",
        run: async () => {
          const st = ok<{ revision: string }>(await call("stat_file", { workdir: "demo", path: "src/app.ts" }), "stat");
          const e = ok<{ revision: string; bytes_after: number }>(
            await call("edit_text_file", {
              workdir: "demo",
              path: "src/app.ts",
              expected_revision: st.revision,
              // biome-ignore lint/suspicious/noTemplateCurlyInString: the edit writes a template literal into the demo file
              edits: [{ old_text: '"Hello, " + name; // TODO: use a template', new_text: "`Hello, ${name}`;" }],
            }),
            "edit",
          );
          const stale = await call("edit_text_file", {
            workdir: "demo",
            path: "src/app.ts",
            expected_revision: st.revision,
            edits: [{ old_text: "Hello", new_text: "Hi" }],
          });
          expect(text(stale).startsWith("REVISION_CONFLICT"), "a stale revision was not refused");
          return [`edited: ${st.revision} → ${e.revision} (${e.bytes_after} bytes)`, `the old revision again → ${text(stale).split(":")[0]}`];
        },
      },
      {
        title: "An agent task asks for approval; a human approves",
        run: async () => {
          const s = ok<{ task_id: string; status: string }>(
            await call("submit_agent_task", { runtime: "fake", workdir: "demo", prompt: "approval:npm test", profile: "review", correlation_id: "demo-run-1" }),
            "submit",
          );
          const waiting = await waitFor(s.task_id, (t) => t["status"] === "waiting_for_approval");
          const req = waiting["pending_request"] as { request_id: string; payload: { command_display: string } };
          ok(await call("respond_agent_approval", { task_id: s.task_id, request_id: req.request_id, decision: "approve_once" }), "respond");
          const done = await waitFor(s.task_id, (t) => t["status"] === "succeeded");
          return [
            `submitted ${s.task_id} (${s.status})`,
            `approval requested for: ${req.payload.command_display}`,
            `approved once → ${done["status"]}: ${String(done["final_response"])}`,
          ];
        },
      },
      {
        title: "Follow its events",
        run: async () => {
          const tasks = ok<{ task_id: string }>(
            await call("submit_agent_task", { runtime: "fake", workdir: "demo", prompt: "events:3", profile: "review", correlation_id: "demo-run-2" }),
            "submit",
          );
          await waitFor(tasks.task_id, (t) => t["status"] === "succeeded");
          const ev = ok<{ events: { event_id: number; event_type: string; correlation_id: string | null }[] }>(
            await call("read_agent_task_events", { task_id: tasks.task_id }),
            "events",
          );
          expect(
            ev.events.every((e) => e.correlation_id === "demo-run-2"),
            "correlation id missing on events",
          );
          return ev.events.map((e) => `#${e.event_id} ${e.event_type}`);
        },
      },
      {
        title: "A large result is spooled and read back exactly",
        run: async () => {
          const unit = "ServerFS ✓ 多字节 ";
          const n = 20_000;
          const s = ok<{ task_id: string }>(
            await call("submit_agent_task", { runtime: "fake", workdir: "demo", prompt: `repeat:${n}:${unit}`, profile: "review" }),
            "submit",
          );
          const t = await waitFor(s.task_id, (x) => x["status"] === "succeeded");
          const result = t["result"] as { storage: string; size_bytes: number; sha256: string };
          expect(result.storage === "spool", "the result was not spooled");
          const hash = createHash("sha256");
          let offset = 0;
          let chunks = 0;
          for (;;) {
            const r = ok<{ text: string; next_offset_bytes: number; eof: boolean }>(
              await call("read_agent_task_result", { task_id: s.task_id, offset_bytes: offset, max_bytes: 65_535 }),
              "read result",
            );
            hash.update(r.text, "utf8");
            chunks++;
            offset = r.next_offset_bytes;
            if (r.eof) break;
          }
          const digest = hash.digest("hex");
          expect(digest === result.sha256, "SHA-256 mismatch");
          return [
            `${result.size_bytes} bytes spooled (inline limit 262144); preview ${Buffer.byteLength(String(t["final_response"]))} bytes`,
            `read back in ${chunks} UTF-8-safe chunks; SHA-256 ${digest.slice(0, 16)}… matches`,
          ];
        },
      },
      {
        title: "A write task holds the workdir's lease",
        run: async () => {
          const s = ok<{ task_id: string }>(await call("submit_agent_task", { runtime: "fake", workdir: "demo", prompt: "wait:" }), "submit");
          await waitFor(s.task_id, (t) => t["status"] === "running");
          const busy = await call("create_text_file", { workdir: "demo", path: "notes/new.md", content: "hi\n" });
          expect(text(busy).startsWith("WORKDIR_BUSY"), `expected WORKDIR_BUSY, got ${text(busy)}`);
          const cancelled = ok<{ status: string }>(await call("cancel_agent_task", { task_id: s.task_id }), "cancel");
          let created: CallToolResult | null = null;
          const deadline = Date.now() + 20_000;
          while (Date.now() < deadline) {
            created = await call("create_text_file", { workdir: "demo", path: "notes/new.md", content: "hi\n" });
            if (!created.isError) break;
            await Bun.sleep(100);
          }
          ok(created!, "create after cancel");
          return [
            `while the task runs: create_text_file → ${text(busy).split(":")[0]}`,
            `cancel → ${cancelled.status}; the lease is released and the write succeeds`,
          ];
        },
      },
    ];

    let failed = 0;
    for (const [i, step] of steps.entries()) {
      const t0 = performance.now();
      write(`${bold(`[${i + 1}/${steps.length}]`)} ${step.title} ... `);
      let lines: string[];
      try {
        lines = await raced(step.run());
      } catch (e) {
        if (e instanceof DemoAborted) throw e;
        failed++;
        out(red("FAILED"));
        out(`      ${e instanceof Error ? e.message : String(e)}`);
        continue;
      }
      out(`${green("ok")} ${dim(`(${Math.round(performance.now() - t0)} ms)`)}`);
      for (const l of lines) out(`      ${l}`);
    }
    out();
    const secs = ((performance.now() - started) / 1000).toFixed(1);
    if (failed === 0) out(green(bold(`All ${steps.length} steps held (${secs} s).`)));
    else out(red(bold(`${failed} of ${steps.length} steps failed (${secs} s).`)));
    return failed === 0 ? 0 : 1;
  } catch (e) {
    if (!(e instanceof DemoAborted)) {
      // stdout may be the very thing that failed: the person reads stderr too
      process.stderr.write(`serverfs demo: failed: ${e instanceof Error ? e.message : String(e)}\n`);
      return 1;
    }
    await cleanUp(client, bridge, root);
    const sig = abort.signal();
    process.stderr.write(`serverfs demo: stopped (${e.message}); its Bridge is stopped and its temporary directory removed\n`);
    return sig ? SIGNAL_EXIT[sig] : 1;
  } finally {
    await cleanUp(client, bridge, root);
    abort.dispose();
  }
}

/** Stops the MCP server and the Bridge and removes the temporary tree; safe to call twice. */
async function cleanUp(client: Client | null, bridge: ReturnType<typeof Bun.spawn> | null, root: string): Promise<void> {
  await client?.close().catch(() => undefined);
  if (bridge && bridge.exitCode === null && bridge.signalCode === null) {
    bridge.kill("SIGTERM");
    // the Bridge's own shutdown is bounded at 15 s; past that it is killed
    const stopped = await Promise.race([bridge.exited.then(() => true), Bun.sleep(20_000).then(() => false)]);
    if (!stopped) {
      bridge.kill("SIGKILL");
      await bridge.exited;
    }
  }
  rmSync(root, { recursive: true, force: true });
}
