/**
 * A submission's model, effort and budget (docs/runtimes.md#models-effort-and-budget,
 * docs/bridge-rpc.md#tasksubmit row 11): what was asked (a continuation inherits its parent's choices
 * unless it overrides them) checked against the runtime's model listing. Offers `resolveChoices`, `needsListing`,
 * `recordedChoices`, `budgetMicroUsd`, `BUDGET_RUNTIMES`, type `AskedChoices`.
 *
 * Every refusal is INVALID_ARGUMENT naming the allowed values, never echoing what was asked.
 */
import { ServerFsError } from "../../../shared/errors.ts";
import type { Manifest } from "../../../shared/manifest.ts";
import type { ModelInfo, RunChoices } from "../../../workers/providers/types.ts";

/** The runtimes that enforce `max_budget_usd` (Claude Code's `--max-budget-usd`); Codex has no per-run budget. */
export const BUDGET_RUNTIMES: readonly string[] = ["claude"];

/** At most this many dollars, in steps of a millionth (the manifest records micro-dollars, an integer). */
const MAX_BUDGET_USD = 1_000_000;

const invalid = (message: string) => new ServerFsError("INVALID_ARGUMENT", message);
const listOf = (values: readonly string[]) => (values.length === 0 ? "none" : values.join(", "));

/** `max_budget_usd` in millionths of a dollar; INVALID_ARGUMENT unless 0 < budget ≤ 1,000,000 in steps of 0.000001. */
export function budgetMicroUsd(usd: number): number {
  const micro = Math.round(usd * 1_000_000);
  // a step of 0.000001 is a whole micro-dollar; 0.001 of one covers the float error of usd * 10^6 up to the maximum
  if (!Number.isFinite(usd) || usd <= 0 || usd > MAX_BUDGET_USD || micro < 1 || Math.abs(usd * 1_000_000 - micro) > 0.001) {
    throw invalid(`max_budget_usd must be a number of dollars above 0 and at most ${MAX_BUDGET_USD}, in steps of 0.000001`);
  }
  return micro;
}

export interface AskedChoices {
  model: string | null;
  effort: string | null;
  max_budget_usd: number | null;
}

/** A parent's choices as its manifest (`manifest_json`) recorded them: none in a manifest from before choices existed, or in none. */
export function recordedChoices(manifestJson: string | null): AskedChoices {
  const c = manifestJson === null ? undefined : (JSON.parse(manifestJson) as Manifest).choices;
  return {
    model: c?.model ?? null,
    effort: c?.effort ?? null,
    max_budget_usd: c?.max_budget_micro_usd != null ? c.max_budget_micro_usd / 1_000_000 : null,
  };
}

/** Whether a submission must see the runtime's listing: it asks for a model or effort, or may run only a listed model. */
export const needsListing = (asked: AskedChoices, onlyListed: boolean): boolean => onlyListed || asked.model !== null || asked.effort !== null;

/**
 * The choices the run gets. `listing` null means the runtime could not list its models (or was not
 * asked, see `needsListing`): then a choice that needs it cannot be checked (AGENT_RUNTIME_NOT_READY,
 * failing closed), and a task that asks for nothing runs the runtime's own default. `onlyListed`: a task
 * that asks for no model runs the listing's default.
 */
export function resolveChoices(runtime: string, asked: AskedChoices, listing: ModelInfo[] | null, onlyListed: boolean): RunChoices {
  if (asked.max_budget_usd !== null && !BUDGET_RUNTIMES.includes(runtime)) {
    throw invalid(`this runtime enforces no budget; max_budget_usd is honoured by: ${listOf(BUDGET_RUNTIMES)}`);
  }
  if (asked.max_budget_usd !== null) budgetMicroUsd(asked.max_budget_usd);
  if (listing === null) {
    if (needsListing(asked, onlyListed)) throw new ServerFsError("AGENT_RUNTIME_NOT_READY", "the runtime did not list its models; retry later");
    return { model: null, effort: null, max_budget_usd: asked.max_budget_usd };
  }
  const names = listing.map((m) => m.model);
  let model: ModelInfo | null = null;
  if (asked.model !== null) {
    model = listing.find((m) => m.model === asked.model) ?? null;
    if (model === null) throw invalid(`this model is not offered by this runtime; allowed: ${listOf(names)}`);
  } else if (onlyListed) {
    model = listing.find((m) => m.is_default) ?? null;
    if (model === null) throw invalid("this runtime offers no model");
  }
  if (asked.effort !== null) {
    // without a model the effort must suit every model the runtime may choose
    const efforts = model !== null ? model.efforts : commonEfforts(listing);
    if (!efforts.includes(asked.effort)) throw invalid(`this effort is not supported by the model; allowed: ${listOf(efforts)}`);
  }
  return { model: model?.model ?? null, effort: asked.effort, max_budget_usd: asked.max_budget_usd };
}

function commonEfforts(models: readonly ModelInfo[]): string[] {
  const [first, ...rest] = models;
  return (first?.efforts ?? []).filter((e) => rest.every((m) => m.efforts.includes(e)));
}
