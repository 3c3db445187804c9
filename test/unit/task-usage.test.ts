/**
 * The task object's `usage` (docs/task-model.md#the-task-object): summed from the task's `task.usage`
 * events per model and in total, cost only where a runtime reported one; null with none.
 */
import { describe, expect, test } from "bun:test";
import { running, useStore } from "./store-fixtures.ts";

const usage = (model: string | null, input: number, cached: number, output: number, reasoning: number, cost: number | null) => ({
  type: "task.usage",
  payload: { model, input_tokens: input, cached_input_tokens: cached, output_tokens: output, reasoning_output_tokens: reasoning, cost_usd: cost },
  at: "2026-01-05T10:00:00.000Z",
});

describe("task usage", () => {
  const { store } = useStore();

  test("a task whose runtime reported nothing has usage null", () => {
    expect(store.getTaskObject(running(store))!.usage).toBeNull();
  });

  test("usage events add up per model and in total; costs sum without float drift; other events do not count", () => {
    const id = running(store);
    store.appendEvents(id, [
      usage("opus", 100, 40, 20, 5, 0.1),
      { type: "agent.message", payload: { text: "hi" }, at: "2026-01-05T10:00:00.000Z" },
      usage("opus", 10, 0, 2, 0, 0.2),
      usage("haiku", 1, 1, 1, 1, null),
    ]);
    expect(store.getTaskObject(id)!.usage).toEqual({
      by_model: [
        { model: "opus", input_tokens: 110, cached_input_tokens: 40, output_tokens: 22, reasoning_output_tokens: 5, cost_usd: 0.3 },
        { model: "haiku", input_tokens: 1, cached_input_tokens: 1, output_tokens: 1, reasoning_output_tokens: 1, cost_usd: null },
      ],
      total: { input_tokens: 111, cached_input_tokens: 41, output_tokens: 23, reasoning_output_tokens: 6, cost_usd: 0.3 },
    });
    expect(store.listTaskObjects({}).tasks.find((t) => t.task_id === id)!.usage!.total.input_tokens).toBe(111);
  });
});
