/**
 * Bridge contract, the v0.6 migration (docs/task-model.md#the-state-database, docs/reliability.md#startup-before-the-socket-opens row T6): a database
 * built with the v0.6 DDL and legacy rows in a fresh state_dir is opened by the real Bridge, which
 * migrates it additively, invents no evidence, reconciles the legacy active tasks at startup, and
 * changes nothing on a second start.
 */
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { existsSync, lstatSync } from "node:fs";
import { join } from "node:path";
import { allEvents, call, codeOf, isTerminalTask, rpc, submitTask } from "../helpers/bridge.ts";
import { createLegacyDb, legacyTimestamp, V07_NEW_TASK_COLUMNS } from "../helpers/legacy-db.ts";
import { useBridge } from "../helpers/use-bridge.ts";

const DONE = "agt_0000000000000000000d0e01";
const OLD = "agt_0000000000000000000d0e02";
const RUNNING = "agt_0000000000000000000d0e03";
const WAITING = "agt_0000000000000000000d0e04";
const NO_SESSION = "agt_0000000000000000000d0e05";
const FOREIGN = "agt_0000000000000000000d0e06";
const REQUEST = "req_0000000000000000000d0e04";

const created = legacyTimestamp(3);
const finished = legacyTimestamp(1);
const runningSince = legacyTimestamp(0.5);

let dbPath: string;

const { env, sock, restart, waitFor } = useBridge({
  prepare(tree) {
    dbPath = createLegacyDb(tree.stateDir, {
      tasks: [
        {
          task_id: DONE,
          status: "succeeded",
          created_at: created,
          started_at: created,
          updated_at: finished,
          completed_at: finished,
          native_session_id: "fake-session-legacy",
          native_turn_id: "fake-turn-legacy",
          final_response: "legacy result ✓",
        },
        { task_id: OLD, status: "succeeded", created_at: legacyTimestamp(201), completed_at: legacyTimestamp(200), final_response: "old" },
        { task_id: RUNNING, status: "running", profile: "workspace-write", created_at: runningSince, started_at: runningSince },
        { task_id: WAITING, status: "waiting_for_approval", created_at: legacyTimestamp(0.4), pending_request_id: REQUEST },
        { task_id: NO_SESSION, status: "failed", created_at: created, completed_at: finished, error_code: "AGENT_PROVIDER_ERROR", error_message: "x" },
        { task_id: FOREIGN, status: "succeeded", created_at: created, completed_at: finished, native_session_id: "other-session", final_response: "f" },
      ],
      events: [
        { task_id: DONE, event_type: "task.started", payload: { runtime: "fake" }, created_at: created },
        { task_id: DONE, event_type: "task.completed", payload: {}, created_at: finished },
        { task_id: RUNNING, event_type: "task.started", payload: { runtime: "fake" }, created_at: runningSince },
      ],
      requests: [
        {
          request_id: REQUEST,
          task_id: WAITING,
          kind: "approval",
          status: "pending",
          payload: { category: "command", title: "Run", available_decisions: [] },
          created_at: legacyTimestamp(0.4),
        },
      ],
    });
  },
});

/** Runs `fn` on a connection of our own to the database the Bridge has open (WAL allows it). */
function withDb<T>(fn: (db: Database) => T): T {
  const db = new Database(dbPath);
  try {
    db.run("PRAGMA busy_timeout = 5000");
    return fn(db);
  } finally {
    db.close();
  }
}

const schemaOf = () =>
  withDb((db) => db.query<{ type: string; name: string; sql: string | null }, []>("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").all());

describe("migration of a v0.6 database", () => {
  test("a legacy task reads with null deadline, manifest and hashes, inline storage and its own timestamps", async () => {
    const t = await call(sock, "task.get", { task_id: DONE });
    expect(t).toMatchObject({
      status: "succeeded",
      created_at: created,
      completed_at: finished,
      deadline_at: null,
      correlation_id: null,
      idempotency_key: null,
      manifest: null,
      manifest_sha256: null,
      final_response: "legacy result ✓",
      final_response_truncated: false,
      result: { storage: "inline", size_bytes: null, sha256: null, retrievable: false },
      error_code: null,
      pending_request: null,
    });
    expect(JSON.stringify(t)).not.toContain("fake-session-legacy");
    expect(codeOf(await rpc(sock, "task.result.read", { task_id: DONE }))).toBe("AGENT_RESULT_NOT_RETRIEVABLE");
  });

  test("legacy events read as schema-1 envelopes, and event_count was set from them", async () => {
    const events = await allEvents(sock, DONE);
    expect(events.map((e) => [e.schema_version, e.event_type, e.payload, e.correlation_id, e.created_at])).toEqual([
      [1, "task.started", { runtime: "fake" }, null, created],
      [1, "task.completed", {}, null, finished],
    ]);
    expect(withDb((db) => db.query<{ n: number }, [string]>("SELECT event_count AS n FROM tasks WHERE task_id = ?").get(DONE)!.n)).toBe(2);
  });

  test("every schema column, index and the manifest trigger exist; a legacy row can never be given a manifest", () => {
    const columns = withDb((db) =>
      db
        .query<{ name: string }, []>("PRAGMA table_info(tasks)")
        .all()
        .map((c) => c.name),
    );
    for (const name of V07_NEW_TASK_COLUMNS) {
      expect(columns).toContain(name);
    }
    const requestColumns = withDb((db) =>
      db
        .query<{ name: string }, []>("PRAGMA table_info(pending_requests)")
        .all()
        .map((c) => c.name),
    );
    expect(requestColumns).toContain("expires_at");
    const names = schemaOf().map((s) => s.name);
    for (const name of ["tasks_status", "tasks_completed_at", "tasks_idempotency_key", "tasks_manifest_immutable"]) expect(names).toContain(name);
    expect(() => withDb((db) => db.query("UPDATE tasks SET manifest_json = '{}' WHERE task_id = ?").run(DONE))).toThrow(/manifest is immutable/);
  });

  test("startup GC collected the legacy task completed more than 168 h ago", async () => {
    expect(codeOf(await rpc(sock, "task.get", { task_id: OLD }))).toBe("AGENT_TASK_NOT_FOUND");
  });
});

describe("startup reconciliation of legacy active tasks (row T6)", () => {
  test("a legacy running task without process evidence was interrupted, never re-run: UNKNOWN, provider_active null", async () => {
    const t = await call(sock, "task.get", { task_id: RUNNING });
    expect(t).toMatchObject({ status: "interrupted", error_code: "BRIDGE_RESTARTED", created_at: runningSince, started_at: runningSince });
    const events = await allEvents(sock, RUNNING);
    expect(events.map((e) => [e.event_type, e.payload])).toEqual([
      ["task.started", { runtime: "fake" }],
      ["runtime.reconcile_started", { runtime: "fake" }],
      ["runtime.reconcile_finished", { runtime: "fake", status: "UNKNOWN", provider_active: null }],
      ["task.reconciled", { status: "UNKNOWN", provider_active: null, error_code: "BRIDGE_RESTARTED" }],
      ["task.interrupted", { error_code: "BRIDGE_RESTARTED" }],
    ]);
  });

  test("a legacy pending request keeps expires_at null, went stale with its task, and a late reply is REQUEST_STALE", async () => {
    expect(await call(sock, "task.get", { task_id: WAITING })).toMatchObject({ status: "interrupted", pending_request_id: null });
    const row = withDb((db) =>
      db.query<{ status: string; expires_at: string | null }, [string]>("SELECT status, expires_at FROM pending_requests WHERE request_id = ?").get(REQUEST),
    );
    expect(row).toEqual({ status: "stale", expires_at: null });
    const late = await rpc(sock, "task.approval.respond", { task_id: WAITING, request_id: REQUEST, decision: "approve_once" });
    expect(codeOf(late)).toBe("REQUEST_STALE");
  });
});

describe("continuing legacy tasks", () => {
  test("a legacy session continues; no session is AGENT_SESSION_NOT_RESUMABLE; a foreign session fails the run", async () => {
    const ok = await submitTask(sock, { prompt: "complete:again", continue_from_task_id: DONE });
    expect(await waitFor(ok.result!["task_id"] as string, isTerminalTask)).toMatchObject({
      status: "succeeded",
      final_response: "continued:again",
      continue_from_task_id: DONE,
    });
    expect(codeOf(await submitTask(sock, { prompt: "complete:x", continue_from_task_id: NO_SESSION }))).toBe("AGENT_SESSION_NOT_RESUMABLE");
    const foreign = await submitTask(sock, { prompt: "complete:x", continue_from_task_id: FOREIGN });
    expect(await waitFor(foreign.result!["task_id"] as string, isTerminalTask)).toMatchObject({
      status: "failed",
      error_code: "AGENT_SESSION_NOT_RESUMABLE",
    });
  });
});

describe("files and connections", () => {
  test("the database files are private regular files", () => {
    for (const name of ["state.sqlite3", "state.sqlite3-wal", "state.sqlite3-shm"]) {
      const st = lstatSync(join(env.stateDir, name));
      expect([name, st.isFile(), st.mode & 0o7777]).toEqual([name, true, 0o600]);
    }
  });

  test("another process's connection shares the live WAL: it sees every write the Bridge commits, before and after it closes", async () => {
    const first = await submitTask(sock, { prompt: "complete:seen" });
    const firstId = first.result!["task_id"] as string;
    await waitFor(firstId, isTerminalTask);
    const statusOf = (id: string) =>
      withDb((db) => db.query<{ status: string }, [string]>("SELECT status FROM tasks WHERE task_id = ?").get(id)?.status ?? null);
    expect(statusOf(firstId)).toBe("succeeded");
    // our connection has closed; were the Bridge holding no WAL locks, it would have checkpointed and removed the live -wal
    const second = await submitTask(sock, { prompt: "complete:seen too" });
    const secondId = second.result!["task_id"] as string;
    await waitFor(secondId, isTerminalTask);
    expect(statusOf(secondId)).toBe("succeeded");
    expect(existsSync(join(env.stateDir, "state.sqlite3-wal"))).toBe(true);
  });
});

describe("idempotence", () => {
  test("a second start migrates nothing: the schema and the legacy rows are unchanged", async () => {
    const rows = () => withDb((db) => db.query("SELECT * FROM tasks ORDER BY task_id").all());
    const schemaBefore = schemaOf();
    const rowsBefore = rows();
    expect(await restart()).toBe(0);
    expect(schemaOf()).toEqual(schemaBefore);
    expect(rows()).toEqual(rowsBefore);
    expect((await call(sock, "task.get", { task_id: DONE }))["manifest"]).toBeNull();
  });
});
