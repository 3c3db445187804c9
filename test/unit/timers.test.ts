/**
 * The deadline and expiry timers count on the monotonic clock (docs/task-model.md#time-and-clocks): a
 * recorded wall-clock time is anchored once, and a later step of the wall clock changes nothing. The
 * wall clock here is the system's plus an offset the test moves; the monotonic clock is the real one.
 * The process-level proof, a real Bridge whose clock steps under libfaketime, is
 * test/durability/clock-steps.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { type Clocks, TimerTable } from "../../src/main/bridge/service/timers.ts";
import { poll } from "../helpers/poll.ts";

const HOUR_MS = 3_600_000;

function steppedClocks(): Clocks & { step(ms: number): void } {
  let offset = 0;
  return {
    wallMs: () => Date.now() + offset,
    monotonicMs: () => performance.now(),
    step(ms: number) {
      offset += ms;
    },
  };
}

const isoIn = (clocks: Clocks, ms: number) => new Date(clocks.wallMs() + ms).toISOString();

describe("TimerTable", () => {
  test("a recorded time is anchored when first met: the wall clock stepping +2 h afterwards does not make it due", () => {
    const clocks = steppedClocks();
    const table = new TimerTable(clocks);
    const deadline = isoIn(clocks, 60_000);
    expect(table.reached("agt_a", deadline)).toBe(false);
    clocks.step(2 * HOUR_MS);
    expect(table.reached("agt_a", deadline)).toBe(false);
    // a time first met after the step is anchored against the stepped wall clock: the record is all there is
    expect(table.reached("agt_b", deadline)).toBe(true);
  });

  test("a timer fires when its time has passed on the monotonic clock, whichever way the wall clock steps", async () => {
    for (const step of [2 * HOUR_MS, -HOUR_MS]) {
      const clocks = steppedClocks();
      const table = new TimerTable(clocks);
      let firedAfter: number | null = null;
      const armedAt = performance.now();
      table.arm("agt_a", isoIn(clocks, 300), () => {
        firedAfter = performance.now() - armedAt;
      });
      clocks.step(step);
      await poll(() => firedAfter !== null, 10_000, `the timer after a ${step} ms step`);
      // not early: the +2 h step did not end it at once (the lower bound is safe on a loaded machine)
      expect(firedAfter!).toBeGreaterThanOrEqual(290);
    }
  });

  test("armAt takes a monotonic instant; dueOf then returns it, whatever the record says", () => {
    const clocks = steppedClocks();
    const table = new TimerTable(clocks);
    const at = table.instantIn(HOUR_MS);
    table.armAt("req_a", at, () => undefined);
    expect(table.dueOf("req_a", isoIn(clocks, -HOUR_MS))).toBe(at);
    expect(table.reached("req_a", isoIn(clocks, -HOUR_MS))).toBe(false);
    table.cancelAll();
  });

  test("cancel stops the timer and keeps the instant; forgetWhere drops both", async () => {
    const clocks = steppedClocks();
    const table = new TimerTable(clocks);
    let fired = 0;
    const iso = isoIn(clocks, 50);
    table.arm("agt_a", iso, () => fired++);
    table.cancel("agt_a");
    clocks.step(-HOUR_MS);
    await poll(() => table.reached("agt_a", iso), 5_000, "the cancelled time being due");
    expect(fired).toBe(0);
    table.forgetWhere((key) => key === "agt_a");
    // forgotten: met again, it is anchored against the wall clock as it is now (an hour back)
    expect(table.reached("agt_a", iso)).toBe(false);
  });
});
