/**
 * Bridge contract, submission (docs/bridge-rpc.md#tasksubmit, docs/task-model.md#continuation, docs/task-model.md#the-execution-manifest): which error wins,
 * profile rules, the start directory's path policy, idempotent replay, correlation_id validation and
 * opacity, the immutable manifest, continuation, and a crashing provider — all through the real
 * Bridge process, its socket and the fake runtime's real child processes.
 */
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { canonicalJson, sha256Hex } from "../../src/shared/canonical-json.ts";
import { allEvents, call, codeOf, isTerminalTask, rpc, submitTask } from "../helpers/bridge.ts";
import { DEFAULT_MANIFEST_LIMITS } from "../helpers/contract-shapes.ts";
import { poll } from "../helpers/poll.ts";
import { useBridge } from "../helpers/use-bridge.ts";
import { type TempDir, tempDir } from "../helpers/workspace.ts";

const extra: TempDir = tempDir("sfs-x-");
const { env, sock, submit, waitFor } = useBridge({
  config: { runtimes: { codex: { enabled: true, bin: join(extra.path, "no-codex") } } },
  extraWorkdirs: [
    { slot: 2, alias: "ro", path: extra.dir("ro"), read_only: true, agent_mode: "review", agent_runtimes: ["fake"] },
    { slot: 3, alias: "off", path: extra.dir("off"), agent_mode: "disabled" },
    { slot: 4, alias: "codexonly", path: extra.dir("cx"), read_only: false, agent_mode: "workspace-write", agent_runtimes: ["codex"] },
  ],
  prepare(tree) {
    tree.dir.dir("ws/.hidden");
    tree.dir.dir("ws/.serverfs-disabled");
    tree.dir.dir("ws/id_rsa");
    tree.dir.dir("ws/src/deep");
    symlinkSync(join(tree.workspace, "src"), join(tree.workspace, "link"));
  },
});
afterAll(() => extra.remove());

const GUARD = () => join(env.lockDir, "active", "01");

const finished = async (params: Record<string, unknown>) => waitFor(await submit(params), isTerminalTask);

/** Waits until the last write task's finally path released slot 1 (its guard goes right before its lease). */
const slotFree = (): Promise<void> => poll(() => !existsSync(GUARD()), 20_000, "the write slot's release");

const submitCode = async (params: Record<string, unknown>) => codeOf(await submitTask(sock, params));

describe("submission order: the first failing step is the answer", () => {
  test("an empty prompt wins over an unknown runtime (step 4 before step 7)", async () => {
    expect(await submitCode({ runtime: "nope", prompt: "" })).toBe("INVALID_REQUEST");
  });

  test("an oversized prompt wins over an absolute path (step 4 before step 5)", async () => {
    expect(await submitCode({ path: "/etc", prompt: "x".repeat(65_537) })).toBe("AGENT_PROMPT_TOO_LARGE");
    expect(await submitCode({ prompt: "x".repeat(65_536) })).toBeUndefined();
  });

  test("a lexically bad path wins over an unknown runtime (step 5 before step 7): `..`, absolute, NUL", async () => {
    for (const path of ["..", "src/../src", "../ws", "/abs", "src\u0000"]) {
      expect(await submitCode({ runtime: "nope", path, prompt: "complete:x" })).toBe("INVALID_WORKDIR_PATH");
    }
  });

  test("an unknown or unavailable runtime wins over a bad profile (step 7 before step 8)", async () => {
    expect(await submitCode({ runtime: "nope", profile: "admin", prompt: "complete:x" })).toBe("AGENT_RUNTIME_UNAVAILABLE");
    expect(await submitCode({ runtime: "codex", workdir: "codexonly", profile: "admin", prompt: "complete:x" })).toBe("AGENT_RUNTIME_UNAVAILABLE");
  });

  test("a bad profile wins over an unknown workdir (step 8 before step 9)", async () => {
    expect(await submitCode({ workdir: "nowhere", profile: "admin", prompt: "complete:x" })).toBe("AGENT_PROFILE_NOT_ALLOWED");
  });

  test("policy authorization in order: alias, disabled, runtime allowlist, profile rank — before the start directory", async () => {
    expect(await submitCode({ workdir: "nowhere", path: ".hidden", prompt: "complete:x" })).toBe("WORKDIR_NOT_FOUND");
    expect(await submitCode({ workdir: "Repo", prompt: "complete:x" })).toBe("WORKDIR_NOT_FOUND");
    expect(await submitCode({ workdir: "off", path: "missing", prompt: "complete:x" })).toBe("AGENT_DISABLED");
    expect(await submitCode({ workdir: "codexonly", path: "missing", prompt: "complete:x" })).toBe("AGENT_RUNTIME_NOT_ALLOWED");
    expect(await submitCode({ workdir: "ro", profile: "workspace-write", path: "missing", prompt: "complete:x" })).toBe("AGENT_PROFILE_NOT_ALLOWED");
  });

  test("profile rules: review on a workspace-write workdir is allowed; workspace-write on a review workdir is AGENT_PROFILE_NOT_ALLOWED", async () => {
    expect(await finished({ prompt: "complete:r" })).toMatchObject({ status: "succeeded", profile: "review", workdir_alias: "repo" });
    expect(await submitCode({ workdir: "ro", profile: "workspace-write", prompt: "complete:w" })).toBe("AGENT_PROFILE_NOT_ALLOWED");
    expect(await finished({ workdir: "ro", prompt: "complete:r" })).toMatchObject({ status: "succeeded", workdir_alias: "ro", workdir_slot: 2 });
  });

  test("the start directory gets the MCP path policy with the Bridge's codes", async () => {
    const cases: [string, string][] = [
      [".hidden", "HIDDEN_PATH_NOT_ALLOWED"],
      [".serverfs-disabled", "RESERVED_PATH"],
      ["id_rsa", "DENIED_PATH"],
      ["link", "SYMLINK_NOT_ALLOWED"],
      ["link/deep", "SYMLINK_NOT_ALLOWED"],
      ["missing", "WORKDIR_PATH_NOT_FOUND"],
      ["missing/deeper", "WORKDIR_PATH_NOT_FOUND"],
      ["README.md", "INVALID_WORKDIR_PATH"],
      ["README.md/x", "INVALID_WORKDIR_PATH"],
      ["..", "INVALID_WORKDIR_PATH"],
    ];
    for (const [path, code] of cases) {
      const r = await submitTask(sock, { path, prompt: "complete:x" });
      expect([path, codeOf(r)]).toEqual([path, code]);
      expect(r.error!.message).not.toContain(env.dir.path);
    }
  });

  test('the path is normalized: "" and "." are the root, ./src/ is src; the provider runs there', async () => {
    expect((await finished({ path: ".", prompt: "complete:x" }))["relative_cwd"]).toBe("");
    const t = await finished({ path: "./src//deep/", prompt: "write:out.txt:hello", profile: "workspace-write" });
    expect(t).toMatchObject({ status: "succeeded", relative_cwd: "src/deep", final_response: "wrote=out.txt" });
    expect((t["manifest"] as { workspace: Record<string, unknown> }).workspace["relative_cwd"]).toBe("src/deep");
    expect(readFileSync(join(env.workspace, "src", "deep", "out.txt"), "utf8")).toBe("hello");
    await slotFree();
  });

  test("a second write task for a held slot is WORKDIR_BUSY; a review task is not held up", async () => {
    const writer = await submit({ prompt: "wait:", profile: "workspace-write" });
    expect(await submitCode({ prompt: "complete:x", profile: "workspace-write" })).toBe("WORKDIR_BUSY");
    expect(await finished({ prompt: "complete:review" })).toMatchObject({ status: "succeeded" });
    await call(sock, "task.cancel", { task_id: writer });
    await slotFree();
    expect(await finished({ prompt: "complete:w", profile: "workspace-write" })).toMatchObject({ status: "succeeded" });
    await slotFree();
  });
});

describe("submission step 2: correlation_id validation and opacity", () => {
  const e257 = `${"é".repeat(128)}a`;
  const e256 = "é".repeat(128);

  test("correlation validation: over 256 UTF-8 bytes or a control character is INVALID_REQUEST; exactly 256 bytes is accepted verbatim", async () => {
    expect(Buffer.byteLength(e257)).toBe(257);
    expect(await submitCode({ prompt: "complete:x", correlation_id: e257 })).toBe("INVALID_REQUEST");
    for (const c of ["a\u0000b", "tab\there", "nl\n", "\u001f", "del\u007f"]) {
      expect(await submitCode({ prompt: "complete:x", correlation_id: c })).toBe("INVALID_REQUEST");
    }
    const t = await finished({ prompt: "complete:x", correlation_id: e256 });
    expect(t["correlation_id"]).toBe(e256);
    // only U+0000–U+001F and U+007F are control characters here; C1 and other characters are opaque text
    expect((await finished({ prompt: "complete:x", correlation_id: "c1\u0085 ✓" }))["correlation_id"]).toBe("c1\u0085 ✓");
  });

  test("an invalid correlation_id wins over an oversized prompt (step 2 before step 4)", async () => {
    expect(await submitCode({ prompt: "x".repeat(70_000), correlation_id: "\u0007" })).toBe("INVALID_REQUEST");
  });

  test('"" counts as null in the answer, the task, the manifest and the events', async () => {
    const r = await submitTask(sock, { prompt: "complete:x", correlation_id: "" });
    expect(r.result!["correlation_id"]).toBeNull();
    const t = await waitFor(r.result!["task_id"] as string, isTerminalTask);
    expect(t["correlation_id"]).toBeNull();
    expect((t["manifest"] as Record<string, unknown>)["correlation_id"]).toBeNull();
    const page = await call<{ correlation_id: unknown; events: { correlation_id: unknown }[] }>(sock, "task.events", { task_id: t["task_id"] });
    expect(page.correlation_id).toBeNull();
    expect(page.events.every((e) => e.correlation_id === null)).toBe(true);
  });

  test("correlation opacity: never parsed, never unique, never an id, stored exactly as sent", async () => {
    const lookalike = '{"task_id":"agt_000000000000000000000000","route":"../x"}';
    const a = await finished({ prompt: "complete:a", correlation_id: lookalike });
    const b = await finished({ prompt: "complete:b", correlation_id: lookalike });
    expect(a["task_id"]).not.toBe(b["task_id"]);
    expect([a["correlation_id"], b["correlation_id"]]).toEqual([lookalike, lookalike]);
    expect(codeOf(await rpc(sock, "task.get", { task_id: lookalike }))).toBe("AGENT_TASK_NOT_FOUND");
  });

  test("it never reaches the provider: no process carries it in its command line or environment", async () => {
    const marker = `corr-${crypto.randomUUID()}`;
    const taskId = await submit({ prompt: "wait:", correlation_id: marker });
    await waitFor(taskId, (t) => t["status"] === "running");
    const carriers: string[] = [];
    for (const pid of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
      for (const file of ["cmdline", "environ"]) {
        try {
          if (readFileSync(`/proc/${pid}/${file}`).includes(marker)) carriers.push(`${pid}/${file}`);
        } catch {
          // another user's process or one that exited meanwhile
        }
      }
    }
    await call(sock, "task.cancel", { task_id: taskId });
    expect(carriers).toEqual([]);
  });
});

describe("submission step 6: idempotency", () => {
  test("the same key and request replay the same task with its current status, without a new task", async () => {
    const first = await submitTask(sock, { prompt: "complete:idem", idempotency_key: "k-replay" });
    expect(first.result).toMatchObject({ status: "queued", idempotency_key: "k-replay", replayed: false });
    const taskId = first.result!["task_id"] as string;
    await waitFor(taskId, isTerminalTask);
    const again = await submitTask(sock, { prompt: "complete:idem", idempotency_key: "k-replay", path: "." });
    expect(again.result).toEqual({ task_id: taskId, status: "succeeded", correlation_id: null, idempotency_key: "k-replay", replayed: true });
    const list = await call<{ tasks: { idempotency_key: string | null }[] }>(sock, "task.list", { limit: 500 });
    expect(list.tasks.filter((t) => t.idempotency_key === "k-replay")).toHaveLength(1);
    expect((await call(sock, "task.get", { task_id: taskId }))["manifest"]).toMatchObject({ idempotency_key: "k-replay" });
  });

  test("a different prompt, path or profile under the same key is AGENT_IDEMPOTENCY_CONFLICT", async () => {
    await finished({ prompt: "complete:one", idempotency_key: "k-conflict" });
    expect(await submitCode({ prompt: "complete:two", idempotency_key: "k-conflict" })).toBe("AGENT_IDEMPOTENCY_CONFLICT");
    expect(await submitCode({ prompt: "complete:one", idempotency_key: "k-conflict", path: "src" })).toBe("AGENT_IDEMPOTENCY_CONFLICT");
    expect(await submitCode({ prompt: "complete:one", idempotency_key: "k-conflict", profile: "workspace-write" })).toBe("AGENT_IDEMPOTENCY_CONFLICT");
  });

  test("correlation_id is not part of the fingerprint: a replay answers with the stored task's correlation_id", async () => {
    const t = await finished({ prompt: "complete:c", idempotency_key: "k-corr", correlation_id: "first" });
    const again = await submitTask(sock, { prompt: "complete:c", idempotency_key: "k-corr", correlation_id: "second" });
    expect(again.result).toEqual({ task_id: t["task_id"], status: "succeeded", correlation_id: "first", idempotency_key: "k-corr", replayed: true });
  });

  test("a replay returns at once, without the later steps: a running write task replays instead of WORKDIR_BUSY", async () => {
    const taskId = await submit({ prompt: "wait:", profile: "workspace-write", idempotency_key: "k-busy" });
    await waitFor(taskId, (t) => t["status"] === "running");
    const again = await submitTask(sock, { prompt: "wait:", profile: "workspace-write", idempotency_key: "k-busy" });
    expect(again.result).toMatchObject({ task_id: taskId, status: "running" });
    await call(sock, "task.cancel", { task_id: taskId });
    await slotFree();
  });

  test('the earlier steps still apply to a replay, and "" is no key', async () => {
    await finished({ prompt: "complete:e", idempotency_key: "k-early" });
    expect(await submitCode({ prompt: "", idempotency_key: "k-early" })).toBe("INVALID_REQUEST");
    expect(await submitCode({ prompt: "complete:e", idempotency_key: "k".repeat(257) })).toBe("INVALID_REQUEST");
    const a = await finished({ prompt: "complete:nokey", idempotency_key: "" });
    const b = await finished({ prompt: "complete:nokey", idempotency_key: "" });
    expect(a["task_id"]).not.toBe(b["task_id"]);
    expect(a["idempotency_key"]).toBeNull();
  });
});

describe("model, effort and budget (docs/runtimes.md#models-effort-and-budget)", () => {
  const refused = async (params: Record<string, unknown>) => {
    const r = await submitTask(sock, { prompt: "complete:x", ...params });
    return { code: r.error?.code, message: r.error?.message ?? "" };
  };

  test("an unknown model, an effort the model lacks, a budget the runtime cannot enforce: INVALID_ARGUMENT naming the allowed values", async () => {
    expect(await refused({ model: "gpt-5.5" })).toEqual({
      code: "INVALID_ARGUMENT",
      message: "this model is not offered by this runtime; allowed: fake-model",
    });
    expect(await refused({ model: "fake-model", effort: "max" })).toEqual({
      code: "INVALID_ARGUMENT",
      message: "this effort is not supported by the model; allowed: low, high",
    });
    expect(await refused({ effort: "max" })).toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(await refused({ max_budget_usd: 1 })).toEqual({
      code: "INVALID_ARGUMENT",
      message: "this runtime enforces no budget; max_budget_usd is honoured by: claude",
    });
    expect(await refused({ max_budget_usd: "1" })).toMatchObject({ code: "INVALID_REQUEST" });
  });

  test("what was given is in the manifest and task.started; a continuation keeps it unless it overrides it; another choice under the same key is a conflict", async () => {
    const first = await finished({ prompt: "complete:one", model: "fake-model", effort: "high", idempotency_key: "k-model" });
    const choices = { model: "fake-model", effort: "high", max_budget_micro_usd: null };
    expect((first["manifest"] as Record<string, unknown>)["choices"]).toEqual(choices);
    expect(sha256Hex(canonicalJson(first["manifest"]))).toBe(first["manifest_sha256"] as string);
    const started = (await allEvents(env.socketPath, first["task_id"] as string)).filter((e) => e.event_type === "task.started");
    expect(started.map((e) => e.payload)).toEqual([{ runtime: "fake", model: "fake-model", effort: "high", max_budget_usd: null }]);
    expect(await submitCode({ prompt: "complete:one", model: "fake-model", effort: "low", idempotency_key: "k-model" })).toBe("AGENT_IDEMPOTENCY_CONFLICT");

    const kept = await finished({ prompt: "complete:two", continue_from_task_id: first["task_id"] });
    expect((kept["manifest"] as Record<string, unknown>)["choices"]).toEqual(choices);
    const changed = await finished({ prompt: "complete:three", continue_from_task_id: first["task_id"], effort: "low" });
    expect((changed["manifest"] as Record<string, unknown>)["choices"]).toEqual({ ...choices, effort: "low" });
  });
});

describe("execution manifest", () => {
  test("immutable manifest creation and exact SHA-256 verification: the manifest fields, canonical JSON hashing to manifest_sha256", async () => {
    const t = await finished({ prompt: "complete:m", path: "src", correlation_id: "m-1", idempotency_key: "k-manifest" });
    const manifest = t["manifest"] as Record<string, unknown>;
    expect(sha256Hex(canonicalJson(manifest))).toBe(t["manifest_sha256"] as string);
    const policySha = sha256Hex(canonicalJson({ agent_mode: "workspace-write", agent_runtimes: ["fake"], alias: "repo", read_only: false, slot: 1 }));
    expect(manifest).toEqual({
      schema_version: 1,
      bridge_version: "0.7.0",
      protocol_version: 1,
      runtime: { name: "fake", version: "1", in_flight_recovery: "session-resume" },
      workspace: { alias: "repo", slot: 1, relative_cwd: "src", profile: "review" },
      policy: { read_only: false, agent_mode: "workspace-write", policy_sha256: policySha },
      limits: DEFAULT_MANIFEST_LIMITS,
      advisor: { enabled: false, preflight_status: "disabled" },
      continuation: { from_task_id: null },
      correlation_id: "m-1",
      deadline_at: t["deadline_at"],
      idempotency_key: "k-manifest",
      choices: { model: null, effort: null, max_budget_micro_usd: null },
    });
    expect(Date.parse(t["deadline_at"] as string) - Date.parse(t["created_at"] as string)).toBe(86_400_000);
    expect(JSON.stringify(manifest)).not.toContain(env.dir.path);
  });

  test("the store refuses a direct UPDATE of manifest_json or manifest_sha256 (trigger)", async () => {
    const t = await finished({ prompt: "complete:immutable" });
    const db = new Database(join(env.stateDir, "state.sqlite3"));
    try {
      db.run("PRAGMA busy_timeout = 5000");
      expect(() => db.query("UPDATE tasks SET manifest_json = '{}' WHERE task_id = ?").run(t["task_id"] as string)).toThrow(/manifest is immutable/);
      expect(() => db.query("UPDATE tasks SET manifest_sha256 = 'x' WHERE task_id = ?").run(t["task_id"] as string)).toThrow(/manifest is immutable/);
    } finally {
      db.close();
    }
    const after = await call(sock, "task.get", { task_id: t["task_id"] });
    expect([after["manifest"], after["manifest_sha256"]]).toEqual([t["manifest"], t["manifest_sha256"]]);
  });
});

describe("submission step 10 and continuation", () => {
  test("a continuation resumes the prior session and records where it came from", async () => {
    const prior = await finished({ prompt: "complete:one" });
    const next = await finished({ prompt: "complete:two", continue_from_task_id: prior["task_id"], path: "src" });
    expect(next).toMatchObject({ status: "succeeded", final_response: "continued:two", continue_from_task_id: prior["task_id"] });
    expect((next["manifest"] as Record<string, unknown>)["continuation"]).toEqual({ from_task_id: prior["task_id"] });
  });

  test("rules in order: prior exists, same workdir, no review→workspace-write escalation, prior terminal", async () => {
    expect(await submitCode({ prompt: "complete:x", continue_from_task_id: "agt_000000000000000000000000" })).toBe("AGENT_TASK_NOT_FOUND");
    const review = await finished({ prompt: "complete:r" });
    expect(await submitCode({ workdir: "ro", prompt: "complete:x", continue_from_task_id: review["task_id"] })).toBe("AGENT_SESSION_NOT_RESUMABLE");
    expect(await submitCode({ profile: "workspace-write", prompt: "complete:x", continue_from_task_id: review["task_id"] })).toBe("AGENT_PROFILE_NOT_ALLOWED");
    const running = await submit({ prompt: "wait:" });
    await waitFor(running, (t) => t["status"] === "running");
    expect(await submitCode({ profile: "workspace-write", prompt: "complete:x", continue_from_task_id: running })).toBe("AGENT_PROFILE_NOT_ALLOWED");
    expect(await submitCode({ prompt: "complete:x", continue_from_task_id: running })).toBe("AGENT_SESSION_NOT_RESUMABLE");
    await call(sock, "task.cancel", { task_id: running });
  });

  test("a workspace-write task may be continued as review", async () => {
    const writer = await finished({ prompt: "complete:w", profile: "workspace-write" });
    await slotFree();
    expect(await finished({ prompt: "complete:r", continue_from_task_id: writer["task_id"] })).toMatchObject({
      status: "succeeded",
      final_response: "continued:r",
    });
  });
});

describe("execution step 9: a failing provider", () => {
  test("a provider dying mid-run (crash:) fails its task with AGENT_PROVIDER_ERROR and the Bridge serves the next task", async () => {
    const crashed = await finished({ prompt: "crash:", profile: "workspace-write" });
    expect(crashed).toMatchObject({ status: "failed", error_code: "AGENT_PROVIDER_ERROR", final_response: null });
    await slotFree();
    expect(await finished({ prompt: "complete:after", profile: "workspace-write" })).toMatchObject({
      status: "succeeded",
      final_response: "after",
    });
    await slotFree();
  });

  test("fail: fails the task with AGENT_PROVIDER_ERROR and the redacted message", async () => {
    const t = await finished({ prompt: `fail:cannot open ${env.workspace}/src/x.ts` });
    expect(t).toMatchObject({ status: "failed", error_code: "AGENT_PROVIDER_ERROR", error_message: "cannot open <workdir>/src/x.ts" });
    const events = await call<{ events: { event_type: string; payload: unknown }[] }>(sock, "task.events", { task_id: t["task_id"] });
    expect(events.events.at(-1)).toMatchObject({ event_type: "task.failed", payload: { error_code: "AGENT_PROVIDER_ERROR" } });
  });

  test("error_message is cut to a UTF-8-safe prefix of at most 4,096 bytes", async () => {
    const t = await finished({ prompt: `fail:${"é".repeat(3000)}` });
    expect(t["error_message"]).toBe("é".repeat(2048));
  });
});
