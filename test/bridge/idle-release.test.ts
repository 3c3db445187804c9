/**
 * The idle Bridge gives memory back (docs/performance.md, "Memory that returns"): after the last run
 * ends, and after 1 MiB of RPC answers, once a second has passed with less than 1 MiB more answered.
 * A real Bridge at `log_level = "debug"`, where each release logs `memory_released`
 * (docs/deployment.md "Logs").
 */
import { describe, expect, test } from "bun:test";
import { call, isTerminalTask } from "../helpers/bridge.ts";
import { useBridge } from "../helpers/use-bridge.ts";

const { sock, bridge, submit, waitFor } = useBridge({ config: { server: { log_level: "debug" } } });

/** task.get of `taskId` until at least `bytes` of answers have come back. */
async function answersWorth(taskId: string, bytes: number): Promise<void> {
  for (let got = 0; got < bytes; ) got += JSON.stringify(await call(sock, "task.get", { task_id: taskId })).length;
}

describe("the idle release", () => {
  test("follows the last run's end, then 1 MiB of task.get answers, and a client polling meanwhile does not put it off", async () => {
    const taskId = await submit({ profile: "review", prompt: "complete:released" });
    await waitFor(taskId, isTerminalTask);
    const afterRun = await bridge().nextLine("memory_released", { since: 0 });
    expect(afterRun["answered_bytes"]).toBeLessThan(1024 * 1024);

    const since = bridge().lines().length;
    await answersWorth(taskId, 1.5 * 1024 * 1024);
    // a poll every 50 ms, each answer a few hundred bytes: the release lands while it goes on
    let polling = true;
    const poller = (async () => {
      while (polling) {
        await call(sock, "task.events", { task_id: taskId, after_event_id: 1_000_000, limit: 1 });
        await Bun.sleep(50);
      }
    })();
    try {
      const afterFlood = await bridge().nextLine("memory_released", { since, timeoutMs: 10_000 });
      expect(afterFlood["answered_bytes"]).toBeGreaterThanOrEqual(1.5 * 1024 * 1024);
    } finally {
      polling = false;
      await poller;
    }
  }, 30_000);
});
