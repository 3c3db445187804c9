/** Shared pieces of the store suites: a migrated store in a fresh temp state_dir and task rows. */
import { afterAll } from "bun:test";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { isServerFsError } from "../../src/shared/errors.ts";
import { buildManifest } from "../../src/shared/manifest.ts";
import { type NewTask, Store } from "../../src/shared/store/index.ts";
import { type TempDir, tempDir } from "../helpers/workspace.ts";

export const taskId = (): string => `agt_${randomBytes(12).toString("hex")}`;
export const requestId = (): string => `req_${randomBytes(12).toString("hex")}`;

/** A timestamp `ms` milliseconds from now, in the one fixed form. */
export const isoIn = (ms: number): string => new Date(Date.now() + ms).toISOString();

export interface StoreFixture {
  dir: TempDir;
  stateDir: string;
  store: Store;
  close(): void;
}

export function openStore(): StoreFixture {
  const dir = tempDir("serverfs-store-");
  const stateDir = join(dir.path, "state");
  const store = Store.open(stateDir, { migrate: true });
  return {
    dir,
    stateDir,
    store,
    close() {
      store.close();
      dir.remove();
    },
  };
}

/** `openStore()` for a whole test file (or describe block), closed and removed after its tests. */
export function useStore(): StoreFixture {
  const fx = openStore();
  afterAll(() => fx.close());
  return fx;
}

/** The code of the ServerFsError `fn` throws (undefined when it returns); any other error is rethrown. */
export function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    if (isServerFsError(e)) return e.code;
    throw e;
  }
  return undefined;
}

export function newTask(overrides: Partial<NewTask> = {}): NewTask {
  const created = overrides.created_at ?? new Date().toISOString();
  const deadline = overrides.deadline_at ?? isoIn(86_400_000);
  const built = buildManifest({
    runtime: { name: "fake", version: "1", in_flight_recovery: "session-resume" },
    workdir: { alias: "repo", slot: 1, read_only: false, agent_mode: "workspace-write", agent_runtimes: ["fake"] },
    relativeCwd: "",
    profile: "workspace-write",
    lifecycle: { max_active_tasks: 4, task_timeout_seconds: 86_400, interaction_timeout_seconds: 0, retention_hours: 168 },
    continueFromTaskId: null,
    correlationId: overrides.correlation_id ?? null,
    deadlineAt: deadline,
    idempotencyKey: overrides.idempotency_key ?? null,
  });
  return {
    task_id: taskId(),
    runtime: "fake",
    workdir_alias: "repo",
    workdir_slot: 1,
    relative_cwd: "",
    profile: "workspace-write",
    created_at: created,
    deadline_at: deadline,
    continue_from_task_id: null,
    correlation_id: null,
    idempotency_key: null,
    submitter_sub: null,
    submitter_client_id: null,
    request_fingerprint: null,
    manifest_json: built.json,
    manifest_sha256: built.sha256,
    ...overrides,
  };
}

/** Inserts a task (limit 1,000 so the active cap never interferes) and returns its id. */
export function insert(store: Store, overrides: Partial<NewTask> = {}): string {
  const r = store.insertTask(newTask(overrides), 1_000);
  if (r.kind !== "inserted") throw new Error("fixture insert hit an idempotency key");
  return r.task.task_id;
}

/** Inserts a task and drives it to `running` through the real transitions. */
export function running(store: Store, overrides: Partial<NewTask> = {}): string {
  const id = insert(store, overrides);
  store.transition(id, "starting");
  store.transition(id, "running");
  return id;
}
