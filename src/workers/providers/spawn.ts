/**
 * Starting a provider child the way every runtime needs it (docs/runtimes.md#process-model, docs/bridge-rpc.md
 * docs/task-model.md#execution steps 2–3): its own process group (Bun's `detached` calls `setsid`, so pgid == pid), stdin and
 * stdout piped, stderr drained into a bounded tail, the environment plus `SERVERFS_PROVIDER_MARK`.
 *
 * Offers:
 * - `spawnProvider(spec)` → `ProviderProcess`, synchronously, with the leader's pgid and start time
 *   already read from `/proc`. A missing binary or start directory throws
 *   `ServerFsError("AGENT_RUNTIME_UNAVAILABLE")`. With `spec.startDir` the provider is spawned from a
 *   handle on the directory verified at submit, re-opened without following links; a start directory
 *   swapped since (for a symlink, say), or a leader whose `/proc/<pid>/cwd` is another directory
 *   (then killed with its group), throws `ServerFsError("SYMLINK_NOT_ALLOWED")`.
 * - `ProviderProcess`: `lines` (the stdout as parsed JSON lines, 64 MiB cap unless `spec.lineCap`,
 *   long strings kept up to `spec.keepBytes`), `send(line)`,
 *   `closeStdin()`, `exited`, `closeAndWait(timeoutMs)`, `stderrTail()`.
 * - `STDERR_TAIL_BYTES`, types `SpawnSpec`, `ProviderProcess`.
 *
 * The stderr tail is raw provider output: callers redact it before it reaches any message.
 */
import { ServerFsError } from "../../shared/errors.ts";
import { closeQuietly } from "../../shared/fs/dir-handle.ts";
import { cwdIdentityOf, type DirIdentity, openVerifiedStartDir, replaced, type VerifiedStartDir } from "../../shared/fs/start-directory.ts";
import { PROVIDER_MARK_VARIABLE, readProcStat } from "../../shared/process-group.ts";
import { boundaryAfter } from "../../shared/utf8.ts";
import { type JsonLine, readJsonLines } from "./line-reader.ts";

export const STDERR_TAIL_BYTES = 8192;

export interface SpawnSpec {
  /** argv; `command[0]` is looked up on PATH when not absolute. */
  command: readonly string[];
  /** Absolute host directory the provider runs in (the spawn's cwd when `startDir` is absent). */
  cwd: string;
  /**
   * The start directory as verified at submit: the spawn goes through a fresh no-follow handle on
   * it, and the leader's `/proc/<pid>/cwd` is checked before the provider can be given any input.
   */
  startDir?: VerifiedStartDir;
  /** The provider's environment, without the mark (added here). */
  env: Readonly<Record<string, string | undefined>>;
  /** 32 lowercase hex, already durable before this call (docs/task-model.md#execution step 2). */
  mark: string;
  lineCap?: number;
  /** How much of a long string in a line is kept (docs/runtimes.md#process-model); default all of it. */
  keepBytes?: number;
  stderrTailBytes?: number;
  /**
   * Called for every stdout line, before it is handed on (the idle timer's signal of life); a promise
   * it returns holds that line, and so the reading of the next, until it settles.
   */
  onOutput?: () => Promise<void> | undefined;
}

export interface ProviderProcess {
  readonly pid: number;
  /** The process group id; equal to `pid`, verified from `/proc`. */
  readonly pgid: number;
  /** Field 22 of `/proc/<pid>/stat`. */
  readonly startTime: number;
  /** The provider's stdout, line by line, each parsed (`NOT_JSON` when it is not JSON); iterate it once. */
  readonly lines: AsyncGenerator<JsonLine>;
  /** Writes `line` plus a newline; writes after the provider went away are dropped. */
  send(line: string): void;
  closeStdin(): void;
  /** Resolves with the exit code (128 + signal number when killed). */
  readonly exited: Promise<number>;
  /** Closes stdin and waits up to `timeoutMs` for the leader to exit; true if it did. */
  closeAndWait(timeoutMs: number): Promise<boolean>;
  /** The last bytes the provider wrote to stderr (raw, for redaction by the caller). */
  stderrTail(): string;
}

/** Keeps only the last `max` bytes of a stream, so a chatty provider cannot grow memory. */
function drainTail(stream: ReadableStream<Uint8Array>, max: number): () => string {
  let tail = Buffer.alloc(0);
  void (async () => {
    for await (const chunk of stream) {
      const joined = Buffer.concat([tail, chunk]);
      tail = joined.length > max ? joined.subarray(joined.length - max) : joined;
    }
  })().catch(() => undefined);
  // the cut may have left the continuation bytes of a character at the front
  return () => tail.subarray(boundaryAfter(tail, 0)).toString("utf8");
}

export function spawnProvider(spec: SpawnSpec): ProviderProcess {
  let child: Bun.Subprocess<"pipe", "pipe", "pipe">;
  // The kernel resolves `/proc/<pid>/fd/<n>` to the directory the handle holds, whatever was renamed
  // or swapped at its path since.
  const dirFd = spec.startDir === undefined ? null : openVerifiedStartDir(spec.startDir);
  try {
    child = Bun.spawn({
      cmd: [...spec.command],
      cwd: dirFd === null ? spec.cwd : `/proc/${process.pid}/fd/${dirFd}`,
      env: { ...spec.env, [PROVIDER_MARK_VARIABLE]: spec.mark },
      detached: true,
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
  } catch {
    throw new ServerFsError("AGENT_RUNTIME_UNAVAILABLE", "the agent runtime could not be started");
  } finally {
    closeQuietly(dirFd);
  }
  // Bun reaps children from its event loop, so the leader is at least a zombie with a readable stat here
  const stat = readProcStat(child.pid);
  if (stat === null || stat.pgrp !== child.pid) {
    child.kill("SIGKILL");
    throw new ServerFsError("AGENT_RUNTIME_UNAVAILABLE", "the agent runtime did not start in its own process group");
  }
  // The contract's own check: the kernel's cwd link says which directory the leader is in. A fresh
  // group that never had input has nothing to stop gracefully, and the finally path's mark scan
  // proves it gone. A leader that already exited has no cwd left to check (and can run nothing).
  if (spec.startDir !== undefined && !startedIn(child.pid, spec.startDir.identity)) {
    killGroup(child.pid);
    throw replaced();
  }
  const stdin = child.stdin;
  let stdinOpen = true;
  const closeStdin = (): void => {
    if (!stdinOpen) return;
    stdinOpen = false;
    try {
      stdin.end();
    } catch {
      // the provider already went away
    }
  };
  let exitedFlag = false;
  const exited = child.exited.then((code) => {
    exitedFlag = true;
    return code;
  });
  const lineOptions = { cap: spec.lineCap, keepBytes: spec.keepBytes };
  return {
    pid: child.pid,
    pgid: stat.pgrp,
    startTime: stat.startTime,
    lines: spec.onOutput ? tapLines(readJsonLines(child.stdout, lineOptions), spec.onOutput) : readJsonLines(child.stdout, lineOptions),
    send(line) {
      if (!stdinOpen) return;
      try {
        stdin.write(`${line}\n`);
        void Promise.resolve(stdin.flush()).catch(() => undefined);
      } catch {
        // a broken pipe: the stream's end reports the failure
      }
    },
    closeStdin,
    exited,
    async closeAndWait(timeoutMs) {
      closeStdin();
      if (exitedFlag) return true;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      });
      const done = await Promise.race([exited.then(() => true as const), timeout]);
      clearTimeout(timer);
      return done;
    },
    stderrTail: drainTail(child.stderr, spec.stderrTailBytes ?? STDERR_TAIL_BYTES),
  };
}

function startedIn(pid: number, startDir: DirIdentity): boolean {
  const cwd = cwdIdentityOf(pid);
  return cwd === null ? readProcStat(pid)?.state === "Z" : cwd === startDir;
}

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // already gone
  }
}

async function* tapLines(lines: AsyncGenerator<JsonLine>, onLine: () => Promise<void> | undefined): AsyncGenerator<JsonLine> {
  for await (const line of lines) {
    const held = onLine();
    if (held) await held;
    yield line;
  }
}
