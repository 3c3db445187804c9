/**
 * `serverfs demo`: the embedded default (docs/configuration.md). It lays out a temporary workspace and state,
 * starts a Bridge with the scripted `fake` runtime, drives `serverfs mcp` over stdio with the SDK's
 * own client as any MCP client would, and prints a readable transcript. Exits 0 only when every
 * step held. Nothing is left behind on any exit: a failed step, a reader that went away
 * (`serverfs demo | head`), SIGINT, SIGTERM or SIGHUP all stop its Bridge and MCP server and remove
 * its temporary directory before the last line.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { selfCommand } from "../../shared/self-command.ts";
import { paint, writeStdout } from "../operator/output.ts";
import { DemoFailure, demoSteps, type Step } from "./steps.ts";

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
  const deadline = performance.now() + 20_000;
  while (!buf.includes('"event":"bridge_started"')) {
    if (performance.now() > deadline) throw new DemoFailure("the Bridge did not start");
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

/**
 * Runs the steps in order, printing each one's title, outcome and lines; a failed step is reported
 * and the next one runs, an abort stops them all. Answers how many failed, after the summary line
 * (its time counts from `started`, the demo's own start).
 */
async function runSteps(steps: Step[], raced: <T>(p: Promise<T>) => Promise<T>, started: number): Promise<number> {
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
  return failed;
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
    const failed = await runSteps(demoSteps(client), raced, started);
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
