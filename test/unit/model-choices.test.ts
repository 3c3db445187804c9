/**
 * The submission's model, effort and budget checks (src/main/bridge/service/model-choices.ts,
 * docs/runtimes.md#models-effort-and-budget): what is refused, what a task that asks for nothing
 * runs, and the budget's micro-dollars.
 */
import { describe, expect, test } from "bun:test";
import { budgetMicroUsd, recordedChoices, resolveChoices } from "../../src/main/bridge/service/model-choices.ts";
import { ServerFsError } from "../../src/shared/errors.ts";
import type { ModelInfo } from "../../src/workers/providers/types.ts";

const LISTING: ModelInfo[] = [
  { model: "big", efforts: ["low", "high"], default_effort: "low", is_default: false },
  { model: "small", efforts: ["low"], default_effort: null, is_default: true },
];
const NONE = { model: null, effort: null, max_budget_usd: null };

function refusal(fn: () => unknown): { code: string; message: string } | null {
  try {
    fn();
    return null;
  } catch (e) {
    if (!(e instanceof ServerFsError)) throw e;
    return { code: e.code, message: e.message };
  }
}

describe("resolveChoices", () => {
  test("a task that asks for nothing runs the runtime's own default, or the listed default when only listed models may run", () => {
    expect(resolveChoices("codex", NONE, LISTING, false)).toEqual(NONE);
    expect(resolveChoices("claude", NONE, LISTING, true)).toEqual({ ...NONE, model: "small" });
  });

  test("an effort without a model must suit every listed model; with one, that model", () => {
    expect(resolveChoices("codex", { ...NONE, effort: "low" }, LISTING, false)).toEqual({ ...NONE, effort: "low" });
    expect(refusal(() => resolveChoices("codex", { ...NONE, effort: "high" }, LISTING, false))).toEqual({
      code: "INVALID_ARGUMENT",
      message: "this effort is not supported by the model; allowed: low",
    });
    expect(resolveChoices("codex", { ...NONE, model: "big", effort: "high" }, LISTING, false)).toEqual({ ...NONE, model: "big", effort: "high" });
  });

  test("models unknown: a submission that needs them is AGENT_RUNTIME_NOT_READY (also a narrowed runtime asking nothing)", () => {
    expect(refusal(() => resolveChoices("codex", { ...NONE, model: "big" }, null, false))?.code).toBe("AGENT_RUNTIME_NOT_READY");
    expect(refusal(() => resolveChoices("claude", NONE, null, true))?.code).toBe("AGENT_RUNTIME_NOT_READY");
    expect(resolveChoices("codex", NONE, null, false)).toEqual(NONE);
  });

  test("a budget: only where the runtime enforces one, above 0, at most 1000000, in steps of 0.000001", () => {
    expect(refusal(() => resolveChoices("codex", { ...NONE, max_budget_usd: 1 }, LISTING, false))?.message).toContain("honoured by: claude");
    for (const bad of [0, -1, 1_000_001, 0.0000001, 1.0000005, Number.NaN]) {
      expect(refusal(() => resolveChoices("claude", { ...NONE, max_budget_usd: bad }, LISTING, true))?.code).toBe("INVALID_ARGUMENT");
    }
    expect(resolveChoices("claude", { ...NONE, max_budget_usd: 2.5 }, LISTING, true)).toEqual({ model: "small", effort: null, max_budget_usd: 2.5 });
  });
});

describe("budget and inheritance", () => {
  test("micro-dollars are exact for every budget in steps of 0.000001", () => {
    expect(budgetMicroUsd(0.000001)).toBe(1);
    expect(budgetMicroUsd(0.1)).toBe(100_000);
    expect(budgetMicroUsd(1_000_000)).toBe(1_000_000_000_000);
  });

  test("a parent's manifest gives its choices back; one from before choices existed gives none", () => {
    expect(recordedChoices(JSON.stringify({ choices: { model: "big", effort: "high", max_budget_micro_usd: 250_000 } }))).toEqual({
      model: "big",
      effort: "high",
      max_budget_usd: 0.25,
    });
    expect(recordedChoices(JSON.stringify({ schema_version: 1 }))).toEqual(NONE);
    expect(recordedChoices(null)).toEqual(NONE);
  });
});
