/**
 * The scripted `fake` runtime as its own process (docs/runtimes.md#fake): run as
 * `bun src/workers/fake-provider.ts` in a checkout, or through `serverfs __fake-provider` by calling
 * `runFakeProvider()`. It speaks the wire of `providers/fake-wire.ts` on stdin/stdout, so it goes
 * through the same process, stream, approval, cancel and crash paths as a real runtime.
 *
 * Offers: `runFakeProvider(): Promise<never>` (the process main; it always ends with `process.exit`);
 * `FAKE_RUN_LOG_VARIABLE`, the environment variable naming its run log.
 *
 * Life: write `ready`; read one `run` request; write `session`; play the prompt's script; write one
 * outcome; then wait for stdin to close and exit 0. stdin closing at any earlier point means the
 * adapter is gone, and the process exits at once (after an interrupt, once its `cancelled` line is
 * out), leaving any grandchild behind, as a careless provider would, for the process-group proof to
 * find. `crash:` exits 1 mid-run; `garbage:`, `hang:`, `stderr:`, `linger:` and `setsid:` are the
 * provider faults of the stress grounds (scripts/stress/provider-faults.ts); `deep:` is a malformed line
 * of another kind, one nested too deep (providers/line-value.ts).
 *
 * Choices the table leaves open: a numeric field (N, MS, SECONDS) that is not a decimal number makes
 * the prompt fall through to "anything else"; `steer:`, `wait:` and `crash:` ignore what follows the
 * colon; `write:` and `gate:` refuse absolute and `..` paths, and `write:`, for a `review` task, writes
 * nothing (a review run is read-only); a question the adapter cannot get answered yields the answers `[]`.
 */
import { appendFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, isAbsolute, normalize } from "node:path";
import { canonicalJson } from "../shared/canonical-json.ts";
import { type AdapterLine, AdapterLineSchema, FAKE_WIRE_PROTOCOL, type ProviderLine, parseLine, type RunRequest } from "./providers/fake-wire.ts";
import { type JsonLine, readJsonLines } from "./providers/line-reader.ts";

type Decision = Extract<AdapterLine, { type: "approval_response" }>["decision"];
type Answers = Extract<AdapterLine, { type: "question_response" }>["answers"];

/** How a script ends; `repeat` and `big` are streamed so that 8 MiB and beyond never sit in one string. */
type Ending =
  | { kind: "final"; text: string }
  | { kind: "repeat"; count: number; piece: string }
  | { kind: "big"; count: number; piece: string }
  | { kind: "failed"; message: string }
  | { kind: "cancelled" };

const CANCELLED: Ending = { kind: "cancelled" };
const INTERRUPTED = Symbol("interrupted");

function write(text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    process.stdout.write(text, (e) => (e ? reject(e) : resolve()));
  });
}

const send = (line: ProviderLine): Promise<void> => write(`${JSON.stringify(line)}\n`);

/** The adapter's lines after the run request: answers by id, steering messages, the interrupt. */
class Inbox {
  private readonly answers = new Map<number, (line: AdapterLine) => void>();
  private readonly messages: string[] = [];
  private messageWaiter: ((text: string) => void) | null = null;
  private interruptResolve!: () => void;
  /** Resolves when the adapter asks the turn to stop. */
  readonly interrupted = new Promise<typeof INTERRUPTED>((resolve) => {
    this.interruptResolve = () => resolve(INTERRUPTED);
  });
  isInterrupted = false;

  async pump(lines: AsyncGenerator<JsonLine>): Promise<void> {
    for await (const raw of lines) {
      const line = parseLine(AdapterLineSchema, raw);
      if (line === null) continue;
      if (line.type === "interrupt") {
        this.isInterrupted = true;
        this.interruptResolve();
      } else if (line.type === "message") {
        await send({ type: "message_ack", id: line.id });
        if (this.messageWaiter) this.messageWaiter(line.text);
        else this.messages.push(line.text);
        this.messageWaiter = null;
      } else if (line.type === "approval_response" || line.type === "question_response") {
        this.answers.get(line.id)?.(line);
        this.answers.delete(line.id);
      }
    }
  }

  /** The answer to request `id`, or INTERRUPTED if the turn is stopped first. */
  answer(id: number): Promise<AdapterLine | typeof INTERRUPTED> {
    return Promise.race([new Promise<AdapterLine>((resolve) => this.answers.set(id, resolve)), this.interrupted]);
  }

  nextMessage(): Promise<string | typeof INTERRUPTED> {
    const queued = this.messages.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return Promise.race([new Promise<string>((resolve) => (this.messageWaiter = resolve)), this.interrupted]);
  }
}

type Script = () => Promise<Ending>;

/** A form's builder; null lets the prompt fall through to the next form. */
type Form = [RegExp, (m: RegExpExecArray, req: RunRequest, inbox: Inbox) => Script | null];

const count = (digits: string): number | null => (Number.isSafeInteger(Number(digits)) ? Number(digits) : null);

/** The prompt forms of the docs/runtimes.md table, in its order; the first match wins. */
const FORMS: Form[] = [
  [/^complete:([\s\S]*)$/, (m) => async () => ({ kind: "final", text: m[1]! })],
  [
    /^repeat:(\d+):([\s\S]*)$/,
    (m) => {
      const n = count(m[1]!);
      return n === null ? null : async () => ({ kind: "repeat", count: n, piece: m[2]! });
    },
  ],
  [
    /^big:(\d+):([\s\S]*)$/,
    (m) => {
      const n = count(m[1]!);
      return n === null ? null : async () => ({ kind: "big", count: n, piece: m[2]! });
    },
  ],
  [
    /^events:(\d+)$/,
    (m, _req, inbox) => {
      const n = count(m[1]!);
      return n === null ? null : () => emitEvents(n, inbox);
    },
  ],
  [
    /^sleep:(\d+):([\s\S]*)$/,
    (m, _req, inbox) => {
      const ms = count(m[1]!);
      if (ms === null) return null;
      return async () => {
        const woke = await Promise.race([Bun.sleep(ms), inbox.interrupted]);
        return woke === INTERRUPTED ? CANCELLED : { kind: "final", text: m[2]! };
      };
    },
  ],
  [
    /^approval:([\s\S]*)$/,
    (m, _req, inbox) => async () => {
      const d = await approve(1, m[1]!, inbox);
      return d === "cancel_task" ? CANCELLED : { kind: "final", text: `approval=${d}` };
    },
  ],
  [
    /^file-change:([^:]*):([\s\S]*)$/,
    (m, _req, inbox) => async () => {
      const d = await approve(1, "", inbox, { path: m[1]!, text: m[2]! });
      return d === "cancel_task" ? CANCELLED : { kind: "final", text: `file_change=${d}` };
    },
  ],
  [
    /^approval-twice:([\s\S]*)$/,
    (m, _req, inbox) => async () => {
      const first = await approve(1, m[1]!, inbox);
      if (first === "cancel_task") return CANCELLED;
      const second = await approve(2, m[1]!, inbox);
      return second === "cancel_task" ? CANCELLED : { kind: "final", text: `approvals=${first},${second}` };
    },
  ],
  [
    /^question:([\s\S]*)$/,
    (m, _req, inbox) => async () => {
      await send({ type: "question_request", id: 1, prompt: m[1]! });
      const reply = await inbox.answer(1);
      if (reply === INTERRUPTED) return CANCELLED;
      const answers: Answers = reply.type === "question_response" ? reply.answers : null;
      return { kind: "final", text: canonicalJson(answers ?? []) };
    },
  ],
  [
    /^steer:/,
    (_m, _req, inbox) => async () => {
      const message = await inbox.nextMessage();
      return message === INTERRUPTED ? CANCELLED : { kind: "final", text: `steered=${message}` };
    },
  ],
  [/^wait:/, (_m, _req, inbox) => () => inbox.interrupted.then(() => CANCELLED)],
  [/^gate:([^:]+):([\s\S]*)$/, (m, _req, inbox) => () => awaitGate(m[1]!, m[2]!, inbox)],
  [/^write:([^:]+):([\s\S]*)$/, (m, req) => async () => writeUnderCwd(req, m[1]!, m[2]!)],
  [
    /^spawn:(\d+(?:\.\d+)?)$/,
    (m, _req, inbox) => async () => {
      // not detached: the grandchild stays in our process group, as a provider's tool would
      Bun.spawn({ cmd: ["sleep", m[1]!], stdio: ["ignore", "ignore", "ignore"] }).unref();
      await inbox.interrupted;
      return CANCELLED;
    },
  ],
  [/^fail:([\s\S]*)$/, (m) => async () => ({ kind: "failed", message: m[1]! })],
  [/^crash:/, () => () => process.exit(1)],
  [
    /^deep:(\d+)$/,
    (m) => {
      const depth = count(m[1]!);
      // a string past 64 KiB makes it a long line (long-line.ts), the path whose parse once recursed
      return depth === null ? null : () => write(`${"[".repeat(depth)}"${"x".repeat(65_537)}"${"]".repeat(depth)}\n`).then(() => new Promise<never>(() => {}));
    },
  ],
  [/^garbage:/, () => () => write("this is not a wire line\n").then(() => new Promise<never>(() => {}))],
  [/^hang:/, () => () => hang()],
  [
    /^stderr:(\d+):([\s\S]*)$/,
    (m) => {
      const mib = count(m[1]!);
      return mib === null ? null : () => floodStderr(mib).then(() => ({ kind: "final", text: m[2]! }));
    },
  ],
  [/^linger:(\d+(?:\.\d+)?):([\s\S]*)$/, (m) => async () => leaveChild(m[1]!, false, m[2]!)],
  [/^setsid:(\d+(?:\.\d+)?):([\s\S]*)$/, (m) => async () => leaveChild(m[1]!, true, m[2]!)],
];

/** `hang:` — SIGTERM caught and never acted on, the thread blocked: no line is read or written again. */
function hang(): never {
  process.on("SIGTERM", () => {});
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  throw new Error("unreachable: nothing wakes the wait");
}

const MIB = 1 << 20;

async function floodStderr(mib: number): Promise<void> {
  const chunk = "stderr flood\n".repeat(Math.ceil(MIB / 13)).slice(0, MIB);
  for (let i = 0; i < mib; i++) {
    await new Promise<void>((resolve, reject) => process.stderr.write(chunk, (e) => (e ? reject(e) : resolve())));
  }
}

/**
 * `linger:` / `setsid:` — a child that ignores SIGTERM and keeps our stdout open, left behind when we
 * end: in our process group, or (`setsid`) in a session of its own, found only by the provider mark.
 */
function leaveChild(seconds: string, ownSession: boolean, text: string): Ending {
  Bun.spawn({
    cmd: ["sh", "-c", `trap '' TERM; exec sleep ${seconds}`],
    detached: ownSession,
    stdio: ["ignore", "inherit", "ignore"],
  }).unref();
  return { kind: "final", text };
}

function script(req: RunRequest, inbox: Inbox): Script {
  for (const [form, build] of FORMS) {
    const m = form.exec(req.prompt);
    const built = m === null ? null : build(m, req, inbox);
    if (built !== null) return built;
  }
  return async () => ({ kind: "final", text: req.prompt });
}

async function approve(id: number, command: string, inbox: Inbox, fileChange?: { path: string; text: string }): Promise<Decision> {
  await send({ type: "approval_request", id, command, ...(fileChange === undefined ? {} : { file_change: fileChange }) });
  const reply = await inbox.answer(id);
  if (reply === INTERRUPTED) return "cancel_task";
  return reply.type === "approval_response" ? reply.decision : "deny";
}

const EVENT_BATCH = 512;

async function emitEvents(n: number, inbox: Inbox): Promise<Ending> {
  for (let i = 1; i <= n; ) {
    if (inbox.isInterrupted) return CANCELLED;
    let batch = "";
    for (const end = Math.min(n, i + EVENT_BATCH - 1); i <= end; i++) {
      batch += `${JSON.stringify({ type: "agent_message", text: `event ${i}` } satisfies ProviderLine)}\n`;
    }
    await write(batch);
  }
  return { kind: "final", text: `events=${n}` };
}

/**
 * `rel` normalized, or null when it is absolute or leaves the working directory. Used relative to the
 * process's working directory, as a provider's tools use paths, not through the path string.
 */
function underCwd(rel: string): string | null {
  const norm = normalize(rel);
  return isAbsolute(rel) || norm === ".." || norm.startsWith("../") ? null : norm;
}

function writeUnderCwd(req: RunRequest, rel: string, text: string): Ending {
  const target = underCwd(rel);
  if (target === null) return { kind: "failed", message: "write path must stay under the working directory" };
  if (req.profile === "review") return { kind: "failed", message: "a review run is read-only" };
  try {
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, text);
  } catch {
    return { kind: "failed", message: "write failed" };
  }
  return { kind: "final", text: `wrote=${rel}` };
}

/** How often `gate:` looks for its file: pacing, not timing; the run goes on when the file is there. */
const GATE_POLL_MS = 20;

/**
 * `gate:` — runs until RELPATH exists below the working directory (the test creates it when it is
 * ready for the run to end), then completes with TEXT; a cancel or the deadline ends it first.
 */
async function awaitGate(rel: string, text: string, inbox: Inbox): Promise<Ending> {
  const gate = underCwd(rel);
  if (gate === null) return { kind: "failed", message: "gate path must stay under the working directory" };
  while (!existsSync(gate)) {
    if ((await Promise.race([Bun.sleep(GATE_POLL_MS), inbox.interrupted])) === INTERRUPTED) return CANCELLED;
  }
  return { kind: "final", text };
}

const REPEAT_CHUNK_BYTES = 1 << 20;

/** `{"type":TYPE,"text":"<prefix><piece × count>"}` and its newline, written in ~1 MiB pieces. */
async function streamRepeat(type: "final" | "agent_message", prefix: string, count: number, piece: string): Promise<void> {
  const escaped = JSON.stringify(piece).slice(1, -1);
  await write(`{"type":${JSON.stringify(type)},"text":${JSON.stringify(prefix).slice(0, -1)}`);
  if (escaped.length > 0) {
    const perChunk = Math.max(1, Math.floor(REPEAT_CHUNK_BYTES / escaped.length));
    const chunk = escaped.repeat(Math.min(perChunk, count));
    let left = count;
    for (; left >= perChunk; left -= perChunk) await write(chunk);
    if (left > 0) await write(escaped.repeat(left));
  }
  await write(`"}\n`);
}

async function report(ending: Ending, continued: boolean): Promise<void> {
  const prefix = continued ? "continued:" : "";
  switch (ending.kind) {
    case "final":
      return send({ type: "final", text: prefix + ending.text });
    case "repeat":
      return streamRepeat("final", prefix, ending.count, ending.piece);
    case "big":
      // one huge event line, then a short result that says how big it was
      await streamRepeat("agent_message", "", ending.count, ending.piece);
      return send({ type: "final", text: `${prefix}big=${ending.count * Buffer.byteLength(ending.piece, "utf8")}` });
    case "failed":
      return send({ type: "failed", code: "AGENT_PROVIDER_ERROR", message: ending.message });
    case "cancelled":
      return send({ type: "cancelled" });
  }
}

export const FAKE_RUN_LOG_VARIABLE = "SERVERFS_FAKE_RUN_LOG";

/**
 * With `SERVERFS_FAKE_RUN_LOG` set (the stress grounds, scripts/stress/), one line `<task_id> <pid>` is
 * appended to that file for every run request taken, independently of the Bridge's own records.
 */
function noteRun(taskId: string): void {
  const log = process.env[FAKE_RUN_LOG_VARIABLE];
  if (log) appendFileSync(log, `${taskId} ${process.pid}\n`);
}

export async function runFakeProvider(): Promise<never> {
  // the adapter stopped reading: nobody is left to talk to
  process.stdout.on("error", () => process.exit(1));
  await send({ type: "ready", protocol: FAKE_WIRE_PROTOCOL });
  const lines = readJsonLines(Bun.stdin.stream());
  const first = await lines.next();
  const req = first.done ? null : parseLine(AdapterLineSchema, first.value);
  if (req === null || req.type !== "run") process.exit(0);
  noteRun(req.task_id);

  const continued = req.continue_session_id !== null;
  if (continued && !req.continue_session_id!.startsWith("fake-session-")) {
    await send({ type: "failed", code: "AGENT_SESSION_NOT_RESUMABLE", message: "the session cannot be resumed" });
  } else {
    const sessionId = req.continue_session_id ?? `fake-session-${req.task_id}`;
    await send({ type: "session", session_id: sessionId, turn_id: `fake-turn-${req.task_id}` });
    const inbox = new Inbox();
    const run = script(req, inbox);
    const reported = run().then((ending) => report(ending, continued));
    await inbox.pump(lines);
    // stdin closed: after an interrupt let the `cancelled` line out first, else the adapter is gone
    if (inbox.isInterrupted) await reported;
    process.exit(0);
  }
  for await (const _ of lines) {
    // after the outcome, only the end of input matters
  }
  process.exit(0);
}

if (import.meta.main) await runFakeProvider();
