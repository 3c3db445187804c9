/**
 * Input parameter schemas that carry their own words (docs/mcp-tools.md#parameters). Some hosts
 * rewrite a tool's input schema before the model sees it — Codex drops `minimum`, `maximum`,
 * `default`, `minLength` and `pattern` (docs/hosts.md) — so every parameter's `description` states
 * its meaning, range and default in words. Each builder makes the check and its sentence from the
 * same values, so a limit cannot change without its text.
 */
import * as v from "valibot";

/** An integer's range. `cap`: the value a larger one is quietly reduced to, named as the reader knows it. */
export interface IntRange {
  min: number;
  max?: number;
  cap?: string;
}

const sentence = (...parts: (string | false | undefined)[]) => parts.filter(Boolean).join(" ");

function rangeWords({ min, max, cap }: IntRange): string {
  const bound = max === undefined ? `An integer, at least ${min}.` : `An integer from ${min} to ${max}.`;
  return sentence(bound, cap && `A larger value is reduced to ${cap}.`);
}

/** An integer parameter; without `max` it declares the largest safe integer, as every integer must declare one. */
export const intParam = (about: string, range: IntRange) =>
  v.pipe(v.number(), v.integer(), v.minValue(range.min), v.maxValue(range.max ?? Number.MAX_SAFE_INTEGER), v.description(sentence(about, rangeWords(range))));

/** A string rule the schema states as a `pattern`, with the words that say it. */
export interface TextRule {
  regex: RegExp;
  words: string;
}

export const ONE_LINE: TextRule = { regex: /^[^\n]*$/, words: "One line: no line break." };

export const textParam = (about: string) => v.pipe(v.string(), v.description(about));

/** A string of at least one character, and following `rule` when given. */
export const nonEmptyTextParam = (about: string, rule?: TextRule) => {
  const words = sentence(about, "At least 1 character.", rule?.words);
  return rule ? v.pipe(v.string(), v.minLength(1), v.regex(rule.regex), v.description(words)) : v.pipe(v.string(), v.minLength(1), v.description(words));
};

export const nullableTextParam = (about: string) => v.pipe(v.nullable(v.string()), v.description(about));

export const flagParam = (about: string) => v.pipe(v.boolean(), v.description(about));

export const choiceParam = <const T extends readonly string[]>(options: T, about: string) =>
  v.pipe(v.picklist(options), v.description(sentence(about, `One of: ${options.join(", ")}.`)));

export const listParam = <T extends v.GenericSchema>(item: T, about: string) => v.pipe(v.array(item), v.description(about));

/** A list of at least one item. */
export const nonEmptyListParam = <T extends v.GenericSchema>(item: T, about: string) =>
  v.pipe(v.array(item), v.minLength(1), v.description(sentence(about, "At least 1 item.")));

/** An optional parameter: absent (or null) means `value`, which its description then states. */
export const withDefault = <T extends v.GenericSchema, const D extends v.InferInput<T>>(schema: T, value: D) =>
  v.pipe(v.optional(schema, value), v.description(sentence(v.getDescription(schema), `Default: ${JSON.stringify(value)}.`)));

/** A search's `limit`: at least 1, capped by `max_search_results`, default the configured default within that cap. */
export const searchLimitParam = (about: string, limits: { default_search_results: number; max_search_results: number }) =>
  withDefault(
    intParam(about, { min: 1, cap: `max_search_results (${limits.max_search_results})` }),
    Math.min(limits.default_search_results, limits.max_search_results),
  );

export const workdirParam = () => textParam("The workdir's alias, as list_workdirs shows it.");

/** A path inside a workdir; `about` says what must be there. */
export const pathParam = (about: string) => textParam(sentence(about, 'Relative to the workdir\'s root, "/"-separated; "" is the root itself.'));

export const revisionParam = (from: string) => textParam(`The revision the object must still have, from ${from}; any other state is REVISION_CONFLICT.`);
