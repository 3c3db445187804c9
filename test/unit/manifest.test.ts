import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { canonicalJson } from "../../src/shared/canonical-json.ts";
import { buildManifest, type ManifestInput, policySha256 } from "../../src/shared/manifest.ts";
import { DEFAULT_MANIFEST_LIMITS } from "../helpers/contract-shapes.ts";
import { insert, openStore } from "./store-fixtures.ts";

const SPEC_POLICY_EXAMPLE = '{"agent_mode":"workspace-write","agent_runtimes":["claude","codex"],"alias":"repo","read_only":false,"slot":1}';
const sha = (s: string) => createHash("sha256").update(s, "utf8").digest("hex");

const input: ManifestInput = {
  runtime: { name: "codex", version: "0.46.0", in_flight_recovery: "session-resume" },
  workdir: { alias: "repo", slot: 1, read_only: false, agent_mode: "workspace-write", agent_runtimes: ["codex", "claude"] },
  relativeCwd: "src/lib",
  profile: "workspace-write",
  lifecycle: { max_active_tasks: 4, task_timeout_seconds: 86_400, interaction_timeout_seconds: 0, retention_hours: 168 },
  continueFromTaskId: "agt_0123456789abcdef01234567",
  correlationId: "ticket-42",
  deadlineAt: "2026-01-06T10:00:00.000Z",
  idempotencyKey: "k-1",
};

describe("policy_sha256", () => {
  test("is sha256 of the canonical policy object; the spec's example input hashes to the same value", () => {
    expect(policySha256(input.workdir)).toBe(sha(SPEC_POLICY_EXAMPLE));
  });

  test("runtimes are sorted, so allowlist order does not change the hash", () => {
    expect(policySha256({ ...input.workdir, agent_runtimes: ["claude", "codex"] })).toBe(policySha256(input.workdir));
  });

  test("every policy fact changes the hash", () => {
    const base = policySha256(input.workdir);
    expect(policySha256({ ...input.workdir, read_only: true })).not.toBe(base);
    expect(policySha256({ ...input.workdir, agent_mode: "review" })).not.toBe(base);
    expect(policySha256({ ...input.workdir, alias: "other" })).not.toBe(base);
    expect(policySha256({ ...input.workdir, slot: 2 })).not.toBe(base);
    expect(policySha256({ ...input.workdir, agent_runtimes: ["codex"] })).not.toBe(base);
  });
});

describe("manifest fields", () => {
  test("the manifest holds exactly the schema-version-1 fields with the effective values", () => {
    const { manifest } = buildManifest(input);
    expect(manifest).toEqual({
      schema_version: 1,
      bridge_version: "0.7.0",
      protocol_version: 1,
      runtime: { name: "codex", version: "0.46.0", in_flight_recovery: "session-resume" },
      workspace: { alias: "repo", slot: 1, relative_cwd: "src/lib", profile: "workspace-write" },
      policy: { read_only: false, agent_mode: "workspace-write", policy_sha256: sha(SPEC_POLICY_EXAMPLE) },
      limits: DEFAULT_MANIFEST_LIMITS,
      advisor: { enabled: false, preflight_status: "disabled" },
      continuation: { from_task_id: "agt_0123456789abcdef01234567" },
      correlation_id: "ticket-42",
      deadline_at: "2026-01-06T10:00:00.000Z",
      idempotency_key: "k-1",
      choices: { model: null, effort: null, max_budget_micro_usd: null },
    });
  });

  test("the model, effort and budget the run was given are recorded, the budget in micro-dollars", () => {
    const { manifest } = buildManifest({ ...input, choices: { model: "gpt-5.5", effort: "high", max_budget_micro_usd: 2_500_000 } });
    expect(manifest.choices).toEqual({ model: "gpt-5.5", effort: "high", max_budget_micro_usd: 2_500_000 });
  });

  test("configured lifecycle values are recorded as they are in effect", () => {
    const { manifest } = buildManifest({
      ...input,
      lifecycle: { max_active_tasks: 2, task_timeout_seconds: 60, interaction_timeout_seconds: 30, retention_hours: 1 },
    });
    expect(manifest.limits).toMatchObject({
      max_active_tasks: 2,
      task_timeout_seconds: 60,
      interaction_timeout_seconds: 30,
      retention_hours: 1,
    });
  });

  test("absent optional values are null, and a version the probe could not read is null", () => {
    const { manifest } = buildManifest({
      ...input,
      runtime: { ...input.runtime, version: null },
      continueFromTaskId: null,
      correlationId: null,
      idempotencyKey: null,
    });
    expect(manifest.runtime.version).toBeNull();
    expect(manifest.continuation).toEqual({ from_task_id: null });
    expect(manifest.correlation_id).toBeNull();
    expect(manifest.idempotency_key).toBeNull();
  });
});

describe("hash", () => {
  test("manifest_json is the canonical JSON and manifest_sha256 is its hash; a reader recomputes it", () => {
    const built = buildManifest(input);
    expect(built.json).toBe(canonicalJson(built.manifest));
    expect(built.sha256).toBe(sha(built.json));
    const reread = JSON.parse(built.json) as unknown;
    expect(sha(canonicalJson(reread))).toBe(built.sha256);
  });

  test("a manifest written before choices existed (no `choices`) still verifies, as it was written", () => {
    // the canonical JSON a Bridge before model choices wrote: every field of today's but `choices`
    const { choices: _, ...old } = buildManifest(input).manifest;
    const json = canonicalJson(old);
    const stored = { json, sha256: sha(json) };
    const store = openStore();
    try {
      const taskId = insert(store.store, { manifest_json: stored.json, manifest_sha256: stored.sha256 });
      const task = store.store.getTaskObject(taskId)!;
      expect(task.manifest).not.toHaveProperty("choices");
      expect(sha(canonicalJson(task.manifest))).toBe(task.manifest_sha256!);
    } finally {
      store.close();
    }
  });

  test("the manifest names no host path", () => {
    const built = buildManifest(input);
    expect(built.json).not.toMatch(/"\//);
  });
});
