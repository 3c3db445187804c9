/**
 * `serverfs console` over HTTP (docs/console.md): the gates (token, cookie, Host, Origin, CSRF), the
 * security headers, and the API's reads and decisions against a real Bridge with the fake runtime.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isTerminalTask } from "../helpers/bridge.ts";
import { type ConsoleProcess, startConsole } from "../helpers/console.ts";
import { runCli, spawnCli } from "../helpers/process.ts";
import { type Task, useBridge } from "../helpers/use-bridge.ts";

const fixture = useBridge();
const { env } = fixture;
let consoleProc: ConsoleProcess;

beforeAll(async () => {
  consoleProc = await startConsole(env.configPath);
}, 30_000);
afterAll(async () => {
  await consoleProc?.stop();
});

const pendingOf = async (prompt: string, status = "waiting_for_approval") => {
  const id = await fixture.submit({ prompt });
  const task = await fixture.waitFor(id, (t) => t["status"] === status);
  return { id, requestId: (task["pending_request"] as { request_id: string }).request_id };
};

describe("access", () => {
  test("prints a loopback URL whose token becomes an HttpOnly, SameSite=Strict cookie, and the redirect drops it", async () => {
    expect(consoleProc.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{43}$/);
    const first = await fetch(consoleProc.url, { redirect: "manual" });
    expect(first.status).toBe(303);
    expect(first.headers.get("location")).toBe("/");
    const cookie = first.headers.get("set-cookie")!;
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Strict");
    const page = await consoleProc.get("/");
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<script src="/console.js" defer></script>');
  });

  test("without the token, or with a wrong one, every path is 401 and says nothing more", async () => {
    for (const path of ["/", "/console.js", "/api/tasks", "/api/session", "/api/health"]) {
      const r = await fetch(consoleProc.origin + path);
      expect(r.status).toBe(401);
    }
    expect((await fetch(`${consoleProc.origin}/?token=wrong`, { redirect: "manual" })).status).toBe(401);
    expect((await fetch(`${consoleProc.origin}/api/tasks`, { headers: { cookie: "serverfs_console=wrong" } })).status).toBe(401);
  });

  test("the token as a Bearer header opens the API for programs", async () => {
    const token = new URL(consoleProc.url).searchParams.get("token")!;
    const r = await fetch(`${consoleProc.origin}/api/tasks`, { headers: { authorization: `Bearer ${token}` } });
    expect(r.status).toBe(200);
  });

  test("a foreign Host is 421 and a foreign Origin 403, even with the cookie", async () => {
    expect((await consoleProc.get("/api/tasks", { host: "evil.example:80" })).status).toBe(421);
    expect((await consoleProc.get("/api/tasks", { origin: "http://evil.example" })).status).toBe(403);
    expect((await consoleProc.get("/api/tasks", { origin: consoleProc.origin })).status).toBe(200);
  });

  test("every answer carries a strict Content-Security-Policy without inline script, and nosniff", async () => {
    const r = await consoleProc.get("/");
    const csp = r.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(r.headers.get("x-content-type-options")).toBe("nosniff");
    expect((await fetch(consoleProc.origin)).headers.get("content-security-policy")).toBe(csp);
  });

  test("a second console beside the first gets its own token, and SIGTERM ends it with exit 0", async () => {
    const other = await startConsole(env.configPath);
    expect(other.origin).not.toBe(consoleProc.origin);
    expect((await fetch(`${other.origin}/api/tasks`, { headers: { cookie: consoleProc.cookie } })).status).toBe(401);
    expect((await other.get("/api/tasks")).status).toBe(200);
    expect(await other.stop()).toBe(0);
  });

  test("with [console] token_file the printed URL leaves the token out, and the file's token opens the console", async () => {
    const tokenFile = join(env.dir.path, "stable-token");
    writeFileSync(tokenFile, "a-stable-console-token\n");
    chmodSync(tokenFile, 0o600);
    const config = join(env.dir.path, "stable.toml");
    writeFileSync(config, `${await Bun.file(env.configPath).text()}\n[console]\ntoken_file = "${tokenFile}"\n`);
    const proc = spawnCli(["console", "--listen", "127.0.0.1:0", "--config", config]);
    try {
      const reader = proc.stdout.getReader();
      let out = "";
      while (!out.includes("\n")) out += new TextDecoder().decode((await reader.read()).value);
      expect(out).toMatch(/^serverfs console: open http:\/\/127\.0\.0\.1:\d+\/\?token=<the token in \[console\] token_file>\n$/);
      expect(out).not.toContain("a-stable-console-token");
      const origin = /open (http:\/\/[^/]+)/.exec(out)![1]!;
      const first = await fetch(`${origin}/?token=a-stable-console-token`, { redirect: "manual" });
      expect(first.status).toBe(303);
    } finally {
      proc.kill("SIGTERM");
      await proc.exited;
    }
  });

  test("--listen off loopback is a usage error; a token file others may read is a configuration error", async () => {
    const wide = await runCli(["console", "--listen", "0.0.0.0:0", "--config", env.configPath]);
    expect(wide.code).toBe(2);
    expect(wide.stderr).toContain("--listen must be a loopback address");
    const tokenFile = join(env.dir.path, "console-token");
    writeFileSync(tokenFile, "a-secret\n");
    chmodSync(tokenFile, 0o644);
    const config = join(env.dir.path, "console.toml");
    writeFileSync(config, `${await Bun.file(env.configPath).text()}\n[console]\ntoken_file = "${tokenFile}"\n`);
    const loose = await runCli(["console", "--listen", "127.0.0.1:0", "--config", config]);
    expect(loose.code).toBe(2);
    expect(loose.stderr).toContain("console.token_file: has mode 0644");
  });
});

describe("decisions", () => {
  test("a POST without the CSRF token is 403 and decides nothing; with it the approval goes through, audited as the operator", async () => {
    const { id, requestId } = await pendingOf("approval:make all");
    const refused = await consoleProc.post(`/api/tasks/${id}/approval`, { request_id: requestId, decision: "approve_once" }, { "x-csrf-token": "" });
    expect(refused.status).toBe(403);
    expect((await fixture.waitFor(id, () => true))["status"]).toBe("waiting_for_approval");

    const ok = await consoleProc.post(`/api/tasks/${id}/approval`, { request_id: requestId, decision: "approve_once" });
    expect(ok.status).toBe(200);
    expect(((await fixture.waitFor(id, isTerminalTask)) as Task)["final_response"]).toBe("approval=approve_once");
    const line = await fixture.bridge().nextLine("request_answered", { since: 0, where: (l) => l["task_id"] === id });
    expect(line["actor"]).toBe("operator");

    // the same answer again lost the race: the Bridge's own code, as 409
    const again = await consoleProc.post(`/api/tasks/${id}/approval`, { request_id: requestId, decision: "deny" });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { error: { code: string } }).error.code).toBe("REQUEST_ALREADY_RESOLVED");
  });

  test("a GET cannot decide, and a body that is not JSON is refused", async () => {
    const { id, requestId } = await pendingOf("approval:make check");
    expect((await consoleProc.get(`/api/tasks/${id}/approval`)).status).toBe(405);
    const form = await consoleProc.post(`/api/tasks/${id}/approval`, { request_id: requestId, decision: "deny" }, { "content-type": "text/plain" });
    expect(form.status).toBe(400);
    expect((await consoleProc.post(`/api/tasks/${id}/cancel`, {})).status).toBe(200);
    expect((await fixture.waitFor(id, isTerminalTask))["status"]).toBe("cancelled");
  });

  test("a question is answered; an unknown task is 404 AGENT_TASK_NOT_FOUND", async () => {
    const { id, requestId } = await pendingOf("question:pick", "waiting_for_question");
    const r = await consoleProc.post(`/api/tasks/${id}/answer`, { request_id: requestId, answers: [{ question_id: "q1", selected_option_ids: ["a"] }] });
    expect(r.status).toBe(200);
    expect(String((await fixture.waitFor(id, isTerminalTask))["final_response"])).toContain('"selected_option_ids":["a"]');
    const missing = await consoleProc.get("/api/tasks/agt_000000000000000000000000");
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("AGENT_TASK_NOT_FOUND");
  });
});

describe("reads", () => {
  test("workdirs show the writer lease holder of a live write task; health lists the doctor checks", async () => {
    const id = await fixture.submit({ prompt: "wait:", profile: "workspace-write" });
    await fixture.waitFor(id, (t) => t["status"] === "running");
    const { workdirs } = (await (await consoleProc.get("/api/workdirs")).json()) as { workdirs: Record<string, unknown>[] };
    expect(workdirs[0]).toMatchObject({ slot: 1, alias: "repo", writer_task_id: id, recovery_needed: false });
    expect((workdirs[0]!["guard"] as { task_id: string }).task_id).toBe(id);
    await consoleProc.post(`/api/tasks/${id}/cancel`, {});
    const { checks } = (await (await consoleProc.get("/api/health")).json()) as { checks: { verdict: string; check: string }[] };
    expect(checks.map((c) => c.check)).toContain("config");
    expect(checks.every((c) => ["ok", "warn", "fail"].includes(c.verdict))).toBe(true);
  });
});
