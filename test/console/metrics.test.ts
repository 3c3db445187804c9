/**
 * `GET /metrics` on the console's listener (docs/console.md#metrics): the Prometheus text format behind
 * the console token or the read-only metrics token, counting what a real Bridge did.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isTerminalTask } from "../helpers/bridge.ts";
import { type ConsoleProcess, startConsole } from "../helpers/console.ts";
import { poll } from "../helpers/poll.ts";
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

/** The value of one sample line, by its exact name and labels. */
function value(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Scrapes until `check` holds on the text (what it counts is written as the Bridge gets there). */
async function scrapeUntil(check: (text: string) => boolean): Promise<string> {
  let text = "";
  await poll(
    async () => {
      text = await (await consoleProc.get("/metrics")).text();
      return check(text);
    },
    20_000,
    () => `the metrics to show it; last scrape:\n${text}`,
  );
  return text;
}

test("counts tasks by status and runtime, pending requests, approval waits, provider starts and failures, events", async () => {
  const waiting = await fixture.submit({ prompt: "approval:make" });
  await fixture.waitFor(waiting, (t) => t["status"] === "waiting_for_approval");
  const failed = await fixture.submit({ prompt: "fail:boom" });
  await fixture.waitFor(failed, isTerminalTask);

  // the task_ended line that counts a failure comes from the run's finally path, after the status is committed
  const before = await scrapeUntil((t) => value(t, 'serverfs_provider_failures_total{runtime="fake",error_code="AGENT_PROVIDER_ERROR"}') === 1);
  expect(before).toContain("# TYPE serverfs_tasks gauge");
  expect(value(before, 'serverfs_tasks{status="waiting_for_approval",runtime="fake"}')).toBe(1);
  expect(value(before, 'serverfs_tasks{status="failed",runtime="fake"}')).toBe(1);
  expect(value(before, 'serverfs_pending_requests{kind="approval"}')).toBe(1);
  expect(value(before, 'serverfs_provider_starts_total{runtime="fake"}')).toBe(2);
  expect(value(before, 'serverfs_provider_failures_total{runtime="fake",error_code="AGENT_PROVIDER_ERROR"}')).toBe(1);
  expect(value(before, "serverfs_approval_wait_seconds_count")).toBe(0);
  expect(value(before, "serverfs_bridge_up")).toBe(1);
  expect(value(before, "serverfs_guards")).toBe(0);
  const events = value(before, "serverfs_events_appended_total")!;
  expect(events).toBeGreaterThan(0);

  const task = await fixture.waitFor(waiting, () => true);
  const requestId = (task["pending_request"] as { request_id: string }).request_id;
  expect((await consoleProc.post(`/api/tasks/${waiting}/approval`, { request_id: requestId, decision: "approve_once" })).status).toBe(200);
  await fixture.waitFor(waiting, isTerminalTask);
  const after = await scrapeUntil((t) => value(t, "serverfs_approval_wait_seconds_count") === 1);
  expect(value(after, "serverfs_approval_wait_seconds_count")).toBe(1);
  expect(value(after, 'serverfs_approval_wait_seconds_bucket{le="+Inf"}')).toBe(1);
  expect(value(after, 'serverfs_approval_wait_seconds_bucket{le="86400"}')).toBe(1);
  expect(value(after, 'serverfs_pending_requests{kind="approval"}')).toBe(0);
  expect(value(after, 'serverfs_tasks{status="succeeded",runtime="fake"}')).toBe(1);
  expect(value(after, "serverfs_events_appended_total")!).toBeGreaterThan(events);
  // every sample line is NAME[{labels}] NUMBER
  for (const line of after.split("\n").filter((l) => l !== "" && !l.startsWith("#"))) expect(line).toMatch(/^[a-z_]+(\{[^}]*\})? -?[0-9.e+]+$/);
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
  const text = await (await consoleProc.get("/metrics")).text();
  expect(value(text, "serverfs_bridge_up")).toBe(0);
  expect(text).not.toContain("serverfs_tasks");
});
