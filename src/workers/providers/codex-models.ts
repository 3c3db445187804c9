/**
 * The models `codex app-server` offers (docs/runtimes.md#models-effort-and-budget): one short-lived
 * app-server, `initialize` then `model/list` page by page, each request bounded by
 * `request_timeout_seconds`; the process group is then ended and proven gone. It never starts a thread.
 *
 * Offers `listCodexModels(command, env, timeoutMs, allowed)` → `ModelInfo[]` (rejects when the CLI does
 * not answer, which the listing shows as models unknown). `allowed` (non-empty) narrows the list to
 * those names; the default is then the CLI's default if allowed, else the first
 * allowed model. `narrowModels(listed, allowed)` is that narrowing.
 */
import * as v from "valibot";
import { newMark } from "../../shared/ids.ts";
import { KILL_BOUNDS, terminateProcessGroup } from "../../shared/process-group.ts";
import { VERSION } from "../../shared/version.ts";
import { CodexRpc, parseIncoming } from "./codex-rpc.ts";
import { spawnProvider } from "./spawn.ts";
import type { ModelInfo } from "./types.ts";

const ModelListPage = v.looseObject({
  data: v.array(
    v.looseObject({
      model: v.string(),
      hidden: v.optional(v.boolean(), false),
      isDefault: v.optional(v.boolean(), false),
      defaultReasoningEffort: v.optional(v.nullable(v.string()), null),
      supportedReasoningEfforts: v.optional(v.array(v.looseObject({ reasoningEffort: v.string() })), []),
    }),
  ),
  nextCursor: v.optional(v.nullable(v.string()), null),
});

/** More pages than any CLI lists; a cursor that never ends is the CLI's fault, not a loop of ours. */
const MAX_PAGES = 20;

export async function listCodexModels(
  command: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  timeoutMs: number,
  allowed: readonly string[],
): Promise<ModelInfo[]> {
  const mark = newMark();
  const proc = spawnProvider({ command, cwd: "/", env, mark });
  const rpc = new CodexRpc(proc, timeoutMs);
  const reading = (async () => {
    for await (const line of proc.lines) {
      const message = parseIncoming(line);
      if (message?.kind === "response") rpc.dispatch(message);
    }
  })()
    .catch(() => undefined)
    .finally(() => rpc.close());
  try {
    await rpc.request("initialize", {
      clientInfo: { name: "serverfs-agent-bridge", title: "ServerFS Agent Bridge", version: VERSION },
      capabilities: { experimentalApi: true },
    });
    rpc.notify("initialized");
    const listed: ModelInfo[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < MAX_PAGES; page++) {
      const r: v.InferOutput<typeof ModelListPage> = v.parse(ModelListPage, await rpc.request("model/list", { cursor, includeHidden: false }));
      for (const m of r.data) {
        if (m.hidden) continue;
        listed.push({
          model: m.model,
          efforts: m.supportedReasoningEfforts.map((e) => e.reasoningEffort),
          default_effort: m.defaultReasoningEffort,
          is_default: m.isDefault,
        });
      }
      cursor = r.nextCursor;
      if (cursor === null) break;
    }
    return narrowModels(listed, allowed);
  } finally {
    rpc.close();
    proc.closeStdin();
    await proc.closeAndWait(1000);
    await terminateProcessGroup(proc.pgid, proc.startTime, mark, KILL_BOUNDS);
    await reading;
  }
}

/**
 * The operator's narrowing (`[runtimes.X] models`): only the allowed names, in the runtime's order,
 * with exactly one default while any is left.
 */
export function narrowModels(listed: readonly ModelInfo[], allowed: readonly string[]): ModelInfo[] {
  if (allowed.length === 0) return [...listed];
  const kept = listed.filter((m) => allowed.includes(m.model));
  const defaultIndex = Math.max(
    0,
    kept.findIndex((m) => m.is_default),
  );
  return kept.map((m, i) => ({ ...m, is_default: i === defaultIndex }));
}
