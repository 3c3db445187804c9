/**
 * The burst against its ceiling (docs/performance.md "## Bridge", issue 14): `tasks` quick `review`
 * tasks of the fake runtime (`complete:`) through a real Bridge with `concurrency` of them active at
 * once, against the same number of fake provider processes spawned and driven alone, `concurrency`
 * at a time, by the same kind of lanes. The provider's own cost (a Bun process starting, its
 * handshake, its outcome) is the ceiling; what the Bridge adds on top (submission, rows, events,
 * the provider group's record, the finally path) is what the ratio shows.
 *
 * Each lane runs one task after the other: through the Bridge, `task.submit` then `task.events` long
 * polls until the task's terminal event; alone, spawn, the `ready` handshake, the `run` request, the
 * `final` line, then stdin closed (the process's exit is not waited for, as the Bridge does not hold a
 * lane for it either). The time is the first request's to the last outcome seen by a lane.
 */
import { readJsonLines } from "../../../src/workers/providers/line-reader.ts";
import { connectLines, type LineClient } from "./bridge-line-client.ts";
import { ms } from "./measure.ts";

export interface BurstLanes {
  tasks: number;
  concurrency: number;
  wall_ms: number;
  tasks_per_s: number;
}

const TERMINAL_EVENTS = new Set(["task.completed", "task.failed", "task.interrupted", "task.cancelled"]);
/** The long poll's own maximum (docs/bridge-rpc.md#long-polls). */
const WAIT_MS = 25_000;

/** Runs `lane(i)` for i = 0..tasks-1, `concurrency` at a time; resolves with the wall time. */
async function lanes(tasks: number, concurrency: number, lane: (laneIndex: number) => Promise<void>): Promise<BurstLanes> {
  let next = 0;
  const began = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, laneIndex) => {
      while (next < tasks) {
        next++;
        await lane(laneIndex);
      }
    }),
  );
  const wall = performance.now() - began;
  return { tasks, concurrency, wall_ms: ms(wall), tasks_per_s: Math.round(tasks / (wall / 1000)) };
}

/** `tasks` `complete:` review tasks through the Bridge at `socketPath`, `concurrency` active at a time. */
export async function bridgeBurst(socketPath: string, tasks: number, concurrency: number): Promise<BurstLanes> {
  const clients = await Promise.all(Array.from({ length: concurrency }, () => connectLines(socketPath)));
  let id = 0;
  const ask = async (client: LineClient, method: string, params: Record<string, unknown>) => {
    const answer = JSON.parse(await client.request(JSON.stringify({ protocol_version: 1, request_id: `c${id++}`, method, params }))) as {
      ok: boolean;
      result?: Record<string, unknown>;
      error?: { code: string };
    };
    if (!answer.ok || !answer.result) throw new Error(`${method} failed: ${answer.error?.code}`);
    return answer.result;
  };
  try {
    return await lanes(tasks, concurrency, async (lane) => {
      const client = clients[lane]!;
      const submitted = await ask(client, "task.submit", { runtime: "fake", workdir: "repo", path: "", profile: "review", prompt: "complete:burst" });
      for (let after = 0; ; ) {
        const page = await ask(client, "task.events", { task_id: submitted["task_id"], after_event_id: after, wait_ms: WAIT_MS });
        const events = page["events"] as { event_type: string }[];
        if (events.some((e) => TERMINAL_EVENTS.has(e.event_type))) return;
        after = page["next_after_event_id"] as number;
      }
    });
  } finally {
    for (const c of clients) c.close();
  }
}

/** The same number of fake providers (`command`, in `cwd`), each driven to its `final` line alone. */
export async function providersAlone(command: readonly string[], cwd: string, tasks: number, concurrency: number): Promise<BurstLanes> {
  const exits: Promise<number>[] = [];
  let n = 0;
  const result = await lanes(tasks, concurrency, async () => {
    const child = Bun.spawn({ cmd: [...command], cwd, detached: true, stdin: "pipe", stdout: "pipe", stderr: "ignore" });
    exits.push(child.exited);
    const lines = readJsonLines(child.stdout);
    const expect = async (type: string) => {
      for (;;) {
        const { done, value } = await lines.next();
        if (done) throw new Error(`the fake provider ended before its ${type} line`);
        if ((value as { type?: unknown }).type === type) return;
      }
    };
    await expect("ready");
    const run = {
      type: "run",
      task_id: `agt_${(n++).toString(16).padStart(24, "0")}`,
      prompt: "complete:burst",
      cwd,
      profile: "review",
      continue_session_id: null,
    };
    child.stdin.write(`${JSON.stringify(run)}\n`);
    await expect("final");
    child.stdin.end();
    void lines.return(undefined);
  });
  await Promise.all(exits);
  return result;
}
