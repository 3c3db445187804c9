/**
 * A burst of submissions (docs/reliability.md "The Bridge under faults", submit and housekeeping):
 * `tasks` `task.submit` requests for quick `review` tasks of the fake runtime, sent as fast as
 * `connections` clients can, each client one request at a time (so `connections` are in flight),
 * each timed from its write to its answer. The answers only say "queued"; the tasks then run and
 * end, which this waits for, so the next burst starts quiet. How long that takes (first write → the
 * last task's `completed_at`) gives the burst's tasks/s; the wait reads the Bridge's database
 * read-only (WAL readers never block its writers), so no poller's RPC load lands on the Bridge.
 */
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { DB_FILE } from "../../../src/shared/store/index.ts";
import type { BridgeEnv } from "../../../test/helpers/bridge.ts";
import { poll } from "../../../test/helpers/poll.ts";
import { connectLines } from "./bridge-line-client.ts";
import { ms } from "./measure.ts";

export interface SubmitBurst {
  tasks: number;
  connections: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  /** From the first write to the last answer. */
  wall_ms: number;
  /** From the first write to the last task's `completed_at` (1 ms resolution). */
  all_terminal_ms: number;
  tasks_per_s: number;
}

const quantile = (sorted: readonly number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;

export async function submitBurst(env: BridgeEnv, tasks: number, connections: number): Promise<SubmitBurst> {
  const clients = await Promise.all(Array.from({ length: connections }, () => connectLines(env.socketPath)));
  try {
    const params = { runtime: "fake", workdir: "repo", path: "", profile: "review", prompt: "complete:burst" };
    const began = performance.now();
    const beganAt = Date.now();
    const answers: { taskId: string; latency: number }[] = [];
    let next = 0;
    const lane = async (client: (typeof clients)[number]) => {
      for (let i = next++; i < tasks; i = next++) {
        const line = JSON.stringify({ protocol_version: 1, request_id: `b${i}`, method: "task.submit", params });
        const t0 = performance.now();
        const answer = JSON.parse(await client.request(line)) as { ok: boolean; result?: { task_id: string } };
        if (!answer.ok || !answer.result) throw new Error(`submit ${i} failed: ${JSON.stringify(answer).slice(0, 200)}`);
        answers.push({ taskId: answer.result.task_id, latency: performance.now() - t0 });
      }
    };
    await Promise.all(clients.map(lane));
    const wall = performance.now() - began;
    const lastCompleted = await allCompleted(
      env.stateDir,
      answers.map((a) => a.taskId),
    );
    const allTerminal = Math.max(1, lastCompleted - beganAt);
    const sorted = answers.map((a) => a.latency).sort((a, b) => a - b);
    return {
      tasks,
      connections,
      p50_ms: ms(quantile(sorted, 0.5)),
      p99_ms: ms(quantile(sorted, 0.99)),
      max_ms: ms(sorted[sorted.length - 1]!),
      wall_ms: ms(wall),
      all_terminal_ms: allTerminal,
      tasks_per_s: Math.round(tasks / (allTerminal / 1000)),
    };
  } finally {
    for (const c of clients) c.close();
  }
}

/** Waits until every task has a `completed_at` (a terminal task always has one); returns the latest, in epoch ms. */
async function allCompleted(stateDir: string, taskIds: string[]): Promise<number> {
  const db = new Database(join(stateDir, DB_FILE), { readonly: true });
  try {
    const inList = `(${taskIds.map(() => "?").join(", ")})`;
    const q = db.query<{ done: number; last: string | null }, string[]>(
      `SELECT COUNT(completed_at) AS done, MAX(completed_at) AS last FROM tasks WHERE task_id IN ${inList}`,
    );
    let last: string | null = null;
    await poll(
      () => {
        const r = q.get(...taskIds)!;
        last = r.last;
        return r.done === taskIds.length;
      },
      120_000,
      "every burst task ending",
    );
    return Date.parse(last!);
  } finally {
    db.close();
  }
}
