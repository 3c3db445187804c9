/**
 * `GET /metrics` on the console's listener (docs/console.md#metrics): the Prometheus text format behind
 * the console token or the read-only metrics token, counting what a real Bridge did, each scrape read by a
 * parser of the format (test/helpers/prometheus.ts).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TASK_STATUSES } from "../../src/shared/store/task-states.ts";
import { isTerminalTask } from "../helpers/bridge.ts";
import { type ConsoleProcess, startConsole } from "../helpers/console.ts";
import { poll } from "../helpers/poll.ts";
import { Scrape } from "../helpers/prometheus.ts";
import { useBridge } from "../helpers/use-bridge.ts";

const fixture = useBridge();
const { env } = fixture;
let consoleProc: ConsoleProcess;
const METRICS_TOKEN = "metrics-only-token";

beforeAll(async () => {
  const tokenFile = join(env.dir.path, "metrics-token");
  writeFileSync(tokenFile, `${METRICS_TOKEN}\n`);
  chmodSync(tokenFile, 0o600);
  const config = join(env.dir.path, "console.toml");
  writeFileSync(config, `${await Bun.file(env.configPath).text()}\n[console]\nmetrics_token_file = "${tokenFile}"\n`);
  consoleProc = await startConsole(config);
}, 30_000);
afterAll(async () => {
  await consoleProc?.stop();
});

/** Scrapes until `check` holds on what the parser read (what it counts is written as the Bridge gets there). */
async function scrapeUntil(check: (scrape: Scrape) => boolean): Promise<Scrape> {
  let scrape: Scrape | undefined;
  await poll(
    async () => {
      scrape = new Scrape(await (await consoleProc.get("/metrics")).text());
      return check(scrape);
    },
    20_000,
    () => `the metrics to show it; last scrape:\n${scrape?.text}`,
  );
  return scrape!;
}

test("counts tasks by status and runtime, pending requests, approval waits, provider starts and failures, events", async () => {
  const waiting = await fixture.submit({ prompt: "approval:make" });
  await fixture.waitFor(waiting, (t) => t["status"] === "waiting_for_approval");
  const failed = await fixture.submit({ prompt: "fail:boom" });
  await fixture.waitFor(failed, isTerminalTask);

  // the task_ended line that counts a failure comes from the run's finally path, after the status is committed
  const fake = { runtime: "fake" };
  const failure = { runtime: "fake", error_code: "AGENT_PROVIDER_ERROR" };
  const before = await scrapeUntil((s) => s.value("serverfs_provider_failures_total", failure) === 1);
  for (const [name, type] of [
    ["serverfs_bridge_up", "GAUGE"],
    ["serverfs_tasks", "GAUGE"],
    ["serverfs_pending_requests", "GAUGE"],
    ["serverfs_approval_wait_seconds", "HISTOGRAM"],
    ["serverfs_provider_starts_total", "COUNTER"],
    ["serverfs_provider_failures_total", "COUNTER"],
    ["serverfs_events_appended_total", "COUNTER"],
    ["serverfs_guards", "GAUGE"],
    ["serverfs_recoveries_total", "COUNTER"],
  ] as const) {
    before.family(name, type);
  }
  expect(before.families.size).toBe(9);
  expect(before.value("serverfs_tasks", { status: "waiting_for_approval", ...fake })).toBe(1);
  expect(before.value("serverfs_tasks", { status: "failed", ...fake })).toBe(1);
  // every status of the runtime is a series, zeros included
  expect(before.family("serverfs_tasks", "GAUGE").metrics.length).toBe(TASK_STATUSES.length);
  expect(before.value("serverfs_pending_requests", { kind: "approval" })).toBe(1);
  expect(before.value("serverfs_pending_requests", { kind: "question" })).toBe(0);
  expect(before.value("serverfs_provider_starts_total", fake)).toBe(2);
  expect(before.value("serverfs_provider_failures_total", failure)).toBe(1);
  expect(before.histogram("serverfs_approval_wait_seconds")).toMatchObject({ count: 0, sum: 0 });
  expect(before.value("serverfs_bridge_up")).toBe(1);
  expect(before.value("serverfs_guards")).toBe(0);
  const events = before.value("serverfs_events_appended_total")!;
  expect(events).toBeGreaterThan(0);

  const task = await fixture.waitFor(waiting, () => true);
  const requestId = (task["pending_request"] as { request_id: string }).request_id;
  expect((await consoleProc.post(`/api/tasks/${waiting}/approval`, { request_id: requestId, decision: "approve_once" })).status).toBe(200);
  await fixture.waitFor(waiting, isTerminalTask);
  const after = await scrapeUntil((s) => s.histogram("serverfs_approval_wait_seconds")?.count === 1);
  const wait = after.histogram("serverfs_approval_wait_seconds")!;
  expect(wait.count).toBe(1);
  expect(wait.buckets.get("86400")).toBe(1);
  expect([...wait.buckets.keys()]).toEqual(["1", "5", "15", "30", "60", "120", "300", "600", "1800", "3600", "7200", "14400", "43200", "86400", "+Inf"]);
  expect(wait.sum).toBeGreaterThan(0);
  expect(after.value("serverfs_pending_requests", { kind: "approval" })).toBe(0);
  expect(after.value("serverfs_tasks", { status: "succeeded", ...fake })).toBe(1);
  expect(after.value("serverfs_events_appended_total")!).toBeGreaterThan(events);
});

test("the metrics token opens /metrics and nothing else; without a token it is 401", async () => {
  const bearer = { authorization: `Bearer ${METRICS_TOKEN}` };
  const r = await fetch(`${consoleProc.origin}/metrics`, { headers: bearer });
  expect(r.status).toBe(200);
  expect(r.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
  expect((await fetch(`${consoleProc.origin}/api/tasks`, { headers: bearer })).status).toBe(401);
  expect((await fetch(`${consoleProc.origin}/metrics`)).status).toBe(401);
  const token = new URL(consoleProc.url).searchParams.get("token")!;
  expect((await fetch(`${consoleProc.origin}/metrics`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
});

test("a Bridge that does not answer is serverfs_bridge_up 0", async () => {
  await fixture.bridge().stop();
  const scrape = new Scrape(await (await consoleProc.get("/metrics")).text());
  expect(scrape.value("serverfs_bridge_up")).toBe(0);
  expect([...scrape.families.keys()]).toEqual(["serverfs_bridge_up"]);
});
