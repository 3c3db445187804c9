/**
 * A task's model, effort, budget and usage as `serverfs tasks list` and `show` print them
 * (docs/runtimes.md#models-effort-and-budget, docs/task-model.md#the-task-object).
 */
import type { TaskObjectResult as Task } from "../../../shared/bridge-protocol/results.ts";

type Usage = NonNullable<Task["usage"]>;
type Totals = Usage["total"];

/** The model the run was given (its manifest), else the ones its usage names, else "". */
export function modelOf(task: Task): string {
  const choices = (task.manifest as { choices?: { model?: string | null } } | null)?.choices;
  if (typeof choices?.model === "string") return choices.model;
  return (task.usage?.by_model ?? [])
    .map((m) => m.model)
    .filter((m): m is string => m !== null)
    .join(",");
}

export const costText = (usd: number | null): string => (usd === null ? "" : `$${usd.toFixed(6).replace(/0{1,4}$/, "")}`);

/** `input/output` tokens for a list row, "" when the runtime reported none. */
export const tokensText = (task: Task): string => (task.usage ? `${task.usage.total.input_tokens}/${task.usage.total.output_tokens}` : "");

function totalsText(t: Totals): string {
  const cost = costText(t.cost_usd);
  return `${t.input_tokens} in (${t.cached_input_tokens} cached), ${t.output_tokens} out (${t.reasoning_output_tokens} reasoning)${cost === "" ? "" : `, ${cost}`}`;
}

/** What the run was asked to run with: model, effort and budget from its manifest. */
export function choicesSummary(task: Task): string | null {
  const c = (task.manifest as { choices?: Record<string, unknown> } | null)?.choices;
  if (!c) return null;
  const parts = [
    typeof c["model"] === "string" ? c["model"] : "the runtime's default",
    typeof c["effort"] === "string" ? `effort ${c["effort"]}` : null,
    typeof c["max_budget_micro_usd"] === "number" ? `budget ${costText(c["max_budget_micro_usd"] / 1_000_000)}` : null,
  ];
  return parts.filter((p) => p !== null).join(", ");
}

export function usageSummary(usage: Usage | null | undefined): string | null {
  if (!usage) return null;
  const perModel = usage.by_model.length > 1 ? usage.by_model.map((m) => `; ${m.model ?? "unknown model"}: ${totalsText(m)}`).join("") : "";
  return `${totalsText(usage.total)}${perModel}`;
}
