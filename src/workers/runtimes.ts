/**
 * Which runtime adapters a Bridge has: `codex` / `claude` when `[runtimes.X] enabled`, `fake` when
 * `[bridge] enable_fake_runtime`. Both the task service (probes) and the provider worker (runs) build
 * their adapters here, so the two can never disagree about what a name means.
 */
import type { ConfigFile } from "../shared/config/schema.ts";
import { createClaudeAdapter } from "./providers/claude.ts";
import { createCodexAdapter } from "./providers/codex.ts";
import { createFakeAdapter } from "./providers/fake.ts";
import type { RuntimeAdapter } from "./providers/types.ts";

/** How the fake provider process is started; a compiled binary passes `[serverfs, "__fake-provider"]`. */
export interface RuntimeOptions {
  fakeCommand?: readonly string[];
}

export function enabledRuntimes(file: Pick<ConfigFile, "bridge" | "runtimes">): string[] {
  const names: string[] = [];
  if (file.runtimes.claude.enabled) names.push("claude");
  if (file.runtimes.codex.enabled) names.push("codex");
  if (file.bridge.enable_fake_runtime) names.push("fake");
  return names;
}

export function createAdapters(file: Pick<ConfigFile, "bridge" | "runtimes">, options: RuntimeOptions = {}): Map<string, RuntimeAdapter> {
  const adapters = new Map<string, RuntimeAdapter>();
  for (const name of enabledRuntimes(file)) {
    if (name === "claude") adapters.set(name, createClaudeAdapter(file.runtimes.claude));
    if (name === "codex") adapters.set(name, createCodexAdapter(file.runtimes.codex));
    if (name === "fake") adapters.set(name, createFakeAdapter(options.fakeCommand ? { command: options.fakeCommand } : {}));
  }
  return adapters;
}
