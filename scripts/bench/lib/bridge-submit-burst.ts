/**
 * A burst of submissions (docs/reliability.md "The Bridge under faults", submit and housekeeping):
 * `tasks` `task.submit` requests for quick `review` tasks of the fake runtime, sent as fast as
 * `connections` clients can, each client one request at a time (so `connections` are in flight),
 * each timed from its write to its answer. The answers only say "queued"; the tasks then run and
 * end, which this waits for, so the next burst starts quiet.
 */
import { type BridgeEnv, isTerminalTask, waitForTask } from "../../../test/helpers/bridge.ts";
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
}

const quantile = (sorted: readonly number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;

export async function submitBurst(env: BridgeEnv, tasks: number, connections: number): Promise<SubmitBurst> {
  const clients = await Promise.all(Array.from({ length: connections }, () => connectLines(env.socketPath)));
  try {
    const params = { runtime: "fake", workdir: "repo", path: "", profile: "review", prompt: "complete:burst" };
    const began = performance.now();
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
    await Promise.all(answers.map((a) => waitForTask(env.socketPath, a.taskId, isTerminalTask, 120_000)));
    const sorted = answers.map((a) => a.latency).sort((a, b) => a - b);
    return {
      tasks,
      connections,
      p50_ms: ms(quantile(sorted, 0.5)),
      p99_ms: ms(quantile(sorted, 0.99)),
      max_ms: ms(sorted[sorted.length - 1]!),
      wall_ms: ms(wall),
    };
  } finally {
    for (const c of clients) c.close();
  }
}
