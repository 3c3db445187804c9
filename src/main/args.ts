/**
 * The command line's grammar: one parser for every command, checked against that command's own flag
 * table (src/main/commands.ts), so an unknown flag or a stray argument is a usage error (exit 2) with a
 * "did you mean" instead of being silently ignored. Typed accessors read the parsed flags.
 */
import { suggestion } from "../shared/did-you-mean.ts";

/** A mistake in the command line: cli.ts prints it with the command's usage and exits 2. */
export class UsageError extends Error {
  /** The command whose usage goes with the message (undefined: the program's). */
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message);
  }
}

export interface FlagSpec {
  /** The value's placeholder (`--limit N`); absent for a switch. */
  value?: string;
  help: string;
}

export interface ParsedArgs {
  /** The positional words, the command's name first. */
  command: string[];
  flags: Map<string, string | true>;
}

/**
 * Splits `argv` into positional words and flags (`--name value`, `--name=value`, `--switch`), checking
 * every flag against `known` (which also says which flags take a value).
 */
export function parseArgs(argv: readonly string[], known: Readonly<Record<string, FlagSpec>>, command?: string): ParsedArgs {
  const words: string[] = [];
  const flags = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith("-") || a === "-") {
      words.push(a);
      continue;
    }
    const eq = a.indexOf("=");
    const name = eq > 0 ? a.slice(0, eq) : a;
    const spec = known[name];
    if (spec === undefined) throw new UsageError(`unknown option ${name}${suggestion(name, Object.keys(known))}`, command);
    if (spec.value === undefined) {
      if (eq > 0) throw new UsageError(`${name} takes no value`, command);
      flags.set(name, true);
    } else if (eq > 0) flags.set(name, a.slice(eq + 1));
    else {
      const value = argv[++i];
      if (value === undefined) throw new UsageError(`${name} needs a value (${name} ${spec.value})`, command);
      flags.set(name, value);
    }
  }
  return { command: words, flags };
}

export const booleanFlag = (args: ParsedArgs, name: string): boolean => args.flags.get(name) === true;

export function stringFlag(args: ParsedArgs, name: string): string | undefined {
  const value = args.flags.get(name);
  return value === true ? undefined : value;
}

/** An integer flag within `min..max`; a minus sign parses, so `-1` gets the range message, not a vaguer one. */
export function intFlag(args: ParsedArgs, name: string, min: number, max: number, command?: string): number | undefined {
  const value = stringFlag(args, name);
  if (value === undefined) return undefined;
  const n = /^-?\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new UsageError(`${name} must be an integer ${min}..${max}`, command);
  return n;
}
