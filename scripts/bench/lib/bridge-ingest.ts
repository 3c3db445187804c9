/**
 * Event ingestion through a real Bridge: concurrent fake `events:N` tasks, each a provider process
 * writing N `agent_message` lines to stdout, which the provider worker parses, redacts, batches and
 * commits. The rate is read back from what is stored: the batches' own commit timestamps
 * (`events.created_at`, set per batch) bound the window from the first committed batch to the last,
 * so process spawn and teardown stay outside it. The submit → all-terminal wall time is kept too.
 */
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { DB_FILE } from "../../../src/shared/store/index.ts";
import { call, isTerminalTask, waitForTask } from "../../../test/helpers/bridge.ts";

export interface IngestRound {
  tasks: number;
  /** Provider events (`agent.message`) stored for the round's tasks. */
  provider_events: number;
  /** Every event of the round's tasks, lifecycle events included. */
  events_stored: number;
  /** First to last committed provider batch, in milliseconds (timestamps have 1 ms resolution). */
  commit_window_ms: number;
  ingest_events_per_s: number;
  submit_to_terminal_ms: number;
  end_to_end_events_per_s: number;
}

const TASK_BOUND_MS = 120_000;

interface Stored {
  provider: number;
  all: number;
  first: string | null;
  last: string | null;
  perTask: number[];
}

/** A read-only look at the Bridge's own database (WAL readers never block its writers). */
function storedEvents(stateDir: string, taskIds: string[]): Stored {
  const db = new Database(join(stateDir, DB_FILE), { readonly: true });
  try {
    const inList = `(${taskIds.map(() => "?").join(", ")})`;
    const provider = db
      .query<{ n: number; first: string | null; last: string | null }, string[]>(
        `SELECT COUNT(*) AS n, MIN(created_at) AS first, MAX(created_at) AS last FROM events
         WHERE event_type = 'agent.message' AND task_id IN ${inList}`,
      )
      .get(...taskIds)!;
    const all = db.query<{ n: number }, string[]>(`SELECT COUNT(*) AS n FROM events WHERE task_id IN ${inList}`).get(...taskIds)!;
    const perTask = taskIds.map(
      (id) => db.query<{ n: number }, [string]>("SELECT COUNT(*) AS n FROM events WHERE event_type = 'agent.message' AND task_id = ?").get(id)!.n,
    );
    return { provider: provider.n, all: all.n, first: provider.first, last: provider.last, perTask };
  } finally {
    db.close();
  }
}

/** Runs `tasks` concurrent `events:<eventsPerTask>` review tasks to the end and measures them. */
export async function ingestRound(socketPath: string, stateDir: string, tasks: number, eventsPerTask: number): Promise<IngestRound> {
  const started = performance.now();
  const submitted = await Promise.all(
    Array.from({ length: tasks }, () =>
      call<{ task_id: string }>(socketPath, "task.submit", {
        runtime: "fake",
        workdir: "repo",
        path: "",
        profile: "review",
        prompt: `events:${eventsPerTask}`,
      }),
    ),
  );
  const ids = submitted.map((s) => s.task_id);
  const ended = await Promise.all(ids.map((id) => waitForTask(socketPath, id, isTerminalTask, TASK_BOUND_MS)));
  const submitToTerminal = performance.now() - started;
  for (const t of ended) {
    if (t["status"] !== "succeeded" || t["final_response"] !== `events=${eventsPerTask}`) {
      throw new Error(`events task ended ${String(t["status"])} (${String(t["error_code"])})`);
    }
  }
  const stored = storedEvents(stateDir, ids);
  if (stored.perTask.some((n) => n !== eventsPerTask) || stored.first === null || stored.last === null) {
    throw new Error(`stored provider events per task: ${stored.perTask.join(", ")}, expected ${eventsPerTask} each`);
  }
  const window = Math.max(1, Date.parse(stored.last) - Date.parse(stored.first));
  return {
    tasks,
    provider_events: stored.provider,
    events_stored: stored.all,
    commit_window_ms: window,
    ingest_events_per_s: Math.round(stored.provider / (window / 1000)),
    submit_to_terminal_ms: Math.round(submitToTerminal),
    end_to_end_events_per_s: Math.round(stored.all / (submitToTerminal / 1000)),
  };
}
