/**
 * The console in a real browser (docs/console.md): Debian's headless Chromium driven by puppeteer-core
 * (no browser download), against a real `serverfs console` and a real Bridge with the fake runtime.
 * With SERVERFS_SCREENSHOTS=DIR set, it also saves the screenshots README shows (the list, a task, a
 * pending approval) there.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { call, isTerminalTask } from "../helpers/bridge.ts";
import { type ConsoleProcess, startConsole } from "../helpers/console.ts";
import { poll } from "../helpers/poll.ts";
import { useBridge } from "../helpers/use-bridge.ts";

const CHROMIUM = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium";
const SHOTS = process.env["SERVERFS_SCREENSHOTS"];
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && process.env["CI"] === "true") {
  test("Chromium is installed (Debian's chromium, as .ci/run installs it)", () => {
    expect(existsSync(CHROMIUM)).toBe(true);
  });
} else if (!hasChromium) {
  console.warn(`\n!!! SKIPPING test/console/browser.test.ts: needs Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)\n`);
}

const fixture = useBridge();
const { env, sock } = fixture;
let consoleProc: ConsoleProcess;
let browser: Browser;
let page: Page;
/** Set by any script that runs where it must not: an attribute handler or a script tag from a task. */
let dialogs = 0;

beforeAll(async () => {
  if (!hasChromium) return;
  consoleProc = await startConsole(env.configPath);
  // root in a container has no user namespace for Chromium's sandbox; the page is ours and local
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  page.on("dialog", (d) => {
    dialogs++;
    void d.dismiss();
  });
  await page.goto(consoleProc.url);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await consoleProc?.stop();
});

/** One part of the page, not the whole window: small files. */
const shot = async (name: string, selector: string) => {
  if (SHOTS) await (await page.$(selector))?.screenshot({ path: join(SHOTS, name), type: "png" });
};

/** Waits for the page to show a fact; polls the DOM rather than racing a timer. */
const waitFor = (what: string, check: () => boolean | Promise<boolean>) => poll(check, 60_000, what);

const text = (selector: string) => page.$eval(selector, (e) => e.textContent ?? "").catch(() => "");
const exists = async (selector: string) => (await page.$(selector)) !== null;

async function submitted(prompt: string, status: string): Promise<string> {
  const id = await fixture.submit({ prompt });
  await fixture.waitFor(id, (t) => t["status"] === status);
  return id;
}

async function openTask(id: string): Promise<void> {
  await waitFor(`row of ${id}`, () => exists(`tr[data-task-id="${id}"]`));
  await page.click(`tr[data-task-id="${id}"]`);
  await waitFor(`task ${id} open`, async () => (await text("#task-id")) === id);
}

/** Waits for the pending request box, then clicks one decision button. */
async function decide(decision: string): Promise<void> {
  await waitFor("the pending request", () => exists(`#pending button[data-decision="${decision}"]`));
  await page.click(`#pending button[data-decision="${decision}"]`);
}

const finalOf = async (id: string) => (await fixture.waitFor(id, isTerminalTask))["final_response"];

describe.skipIf(!hasChromium)("tasks and decisions", () => {
  test("the URL's token becomes the cookie: the address bar keeps no token and the page loads its script", async () => {
    expect(page.url()).toBe(`${consoleProc.origin}/`);
    await waitFor("the connection line", async () => (await text("#connection")).startsWith("updated"));
  });

  test("a new approval task appears without a reload; its approval shows the command; approve → the timeline shows approval.resolved", async () => {
    // a reload would drop this mark: the row must come without one
    await page.evaluate(() => {
      (globalThis as { __mark?: number }).__mark = 1;
    });
    const id = await submitted("approval:make deploy --dry-run", "waiting_for_approval");
    await waitFor("the new row", () => exists(`tr[data-task-id="${id}"]`));
    expect(await page.evaluate(() => (globalThis as { __mark?: number }).__mark)).toBe(1);
    expect(await text(`tr[data-task-id="${id}"] td:nth-child(2)`)).toBe("waiting_for_approval");
    await waitFor("the waiting count", async () => (await text("#waiting")) === "1 waiting for you");
    expect(await page.title()).toBe("(1) ServerFS console");
    await shot("console-tasks.png", "#tasks-panel");

    await openTask(id);
    await waitFor("the command", async () => (await text("#pending pre.command")) === "make deploy --dry-run");
    const offered = await page.$$eval("#pending button[data-decision]", (bs) => bs.map((b) => b.getAttribute("data-decision")));
    expect(offered).toEqual(["approve_once", "approve_session", "deny", "cancel_task"]);
    await decide("approve_once");
    expect(await finalOf(id)).toBe("approval=approve_once");
    await waitFor("approval.resolved in the timeline", () => exists('#timeline li[data-event-type="approval.resolved"]'));
    await waitFor("the task's status", async () => (await text("#task-status")) === "succeeded");
    await waitFor("the request gone", async () => !(await exists("#pending-request")));
    await shot("console-task.png", "#task-panel");
  });

  test("a file change shows its path and diff and only the decisions offered; deny", async () => {
    const id = await submitted("file-change:src/notes.txt:first line\nsecond line\n", "waiting_for_approval");
    await openTask(id);
    await waitFor("the diff", () => exists("#pending pre.diff"));
    expect(await text("#pending .file-name")).toBe("src/notes.txt");
    const added = await page.$$eval("#pending pre.diff span.diff-add", (s) => s.map((e) => e.textContent));
    expect(added).toEqual(["+first line", "+second line"]);
    const offered = await page.$$eval("#pending button[data-decision]", (bs) => bs.map((b) => b.getAttribute("data-decision")));
    expect(offered).toEqual(["approve_once", "deny", "cancel_task"]);
    await shot("console-approval.png", "#pending-request");
    await decide("deny");
    expect(await finalOf(id)).toBe("file_change=deny");
  });

  test("cancel ends a running task", async () => {
    const id = await submitted("wait:", "running");
    await openTask(id);
    // the button belongs to the task shown, never to one shown before
    await waitFor("the cancel button", () => exists(`#cancel-task[data-task-id="${id}"]`));
    await page.click("#cancel-task");
    expect((await fixture.waitFor(id, isTerminalTask))["status"]).toBe("cancelled");
    await waitFor("cancelled on the page", async () => (await text("#task-status")) === "cancelled");
  });

  test("a question is answered with the option chosen", async () => {
    const id = await submitted("question:Which branch?", "waiting_for_question");
    await openTask(id);
    await waitFor("the question", () => exists('#pending input[value="b"]'));
    expect(await text("#pending fieldset p")).toBe("Which branch?");
    await page.click('#pending input[value="b"]');
    await page.click("#answer-submit");
    expect(String(await finalOf(id))).toContain('"selected_option_ids":["b"]');
    await waitFor("question.answered in the timeline", () => exists('#timeline li[data-event-type="question.answered"]'));
  });

  test("an answer that lost the race shows the Bridge's code and decides nothing twice", async () => {
    const id = await submitted("approval:make race", "waiting_for_approval");
    await openTask(id);
    await waitFor("the buttons", () => exists('#pending button[data-decision="deny"]'));
    // the button as the person saw it: the page may redraw the request away once the other answer lands
    const deny = (await page.$('#pending button[data-decision="deny"]'))!;
    const task = await fixture.waitFor(id, () => true);
    await call(sock, "task.approval.respond", {
      task_id: id,
      request_id: (task["pending_request"] as { request_id: string }).request_id,
      decision: "approve_once",
    });
    await deny.evaluate((b) => b.click());
    await waitFor("the refusal", async () => (await text("#decision-result")).startsWith("REQUEST_ALREADY_RESOLVED"));
    expect(await finalOf(id)).toBe("approval=approve_once");
  });
});

describe.skipIf(!hasChromium)("untrusted text runs nothing", () => {
  const SCRIPT = "<script>window.__pwned = 1; alert(1)</script>";
  const IMG = '<img src=x onerror="window.__pwned = 2; alert(2)">';

  test("a command, a file name, a diff and a final response holding markup render as text", async () => {
    const command = `echo ${SCRIPT}${IMG}`;
    const shown = await submitted(`approval:${command}`, "waiting_for_approval");
    await openTask(shown);
    await waitFor("the command", async () => (await text("#pending pre.command")) === command);
    await decide("deny");
    await finalOf(shown);

    const fileName = "<img src=x onerror=alert(3)>.txt";
    const changed = await submitted(`file-change:${fileName}:${SCRIPT}\n${IMG}\n`, "waiting_for_approval");
    await openTask(changed);
    await waitFor("the file name", async () => (await text("#pending .file-name")) === fileName);
    const added = await page.$$eval("#pending pre.diff span.diff-add", (s) => s.map((e) => e.textContent));
    expect(added).toEqual([`+${SCRIPT}`, `+${IMG}`]);
    expect(await page.$$eval("#pending img, #pending script, #task-panel img", (n) => n.length)).toBe(0);
    await decide("deny");
    await finalOf(changed);

    const answered = await fixture.submit({ prompt: `complete:${SCRIPT}${IMG}` });
    await fixture.waitFor(answered, isTerminalTask);
    await openTask(answered);
    await waitFor("the response", async () => (await text("#task-fields pre")) === `${SCRIPT}${IMG}`);

    expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.$$eval("body img, body script:not([src])", (n) => n.length)).toBe(0);
    expect(dialogs).toBe(0);
  });
});

describe.skipIf(!hasChromium)("refusals", () => {
  test("a browser without the token gets 401 and no page", async () => {
    const context = await browser.createBrowserContext();
    try {
      const stranger = await context.newPage();
      const answer = await stranger.goto(`${consoleProc.origin}/`);
      expect(answer?.status()).toBe(401);
      expect(await stranger.$("#tasks")).toBeNull();
    } finally {
      await context.close();
    }
  });

  test("the page's own POST without the CSRF token is 403", async () => {
    const id = await submitted("approval:make csrf", "waiting_for_approval");
    const status = await page.evaluate(
      async (taskId) => (await fetch(`/api/tasks/${taskId}/cancel`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).status,
      id,
    );
    expect(status).toBe(403);
    expect((await fixture.waitFor(id, () => true))["status"]).toBe("waiting_for_approval");
    await call(sock, "task.cancel", { task_id: id });
  });

  test("a form on a foreign origin posting to the console is refused and cancels nothing", async () => {
    const id = await submitted("wait:", "running");
    const target = `${consoleProc.origin}/api/tasks/${id}/cancel`;
    let posted = 0;
    const foreign = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: () =>
        new Response(
          `<form method="post" action="${target}" enctype="text/plain"><input name="a" value="b"></form><script>document.forms[0].submit()</script>`,
          {
            headers: { "content-type": "text/html" },
          },
        ),
    });
    try {
      const attacker = await browser.newPage();
      attacker.on("response", (r) => {
        if (r.url() === target) posted = r.status();
      });
      await attacker.goto(`http://localhost:${foreign.port}/`);
      await waitFor("the forged POST's answer", () => posted !== 0);
      expect(posted).toBe(403);
      await attacker.close();
    } finally {
      await foreign.stop(true);
    }
    expect((await fixture.waitFor(id, () => true))["status"]).toBe("running");
    await call(sock, "task.cancel", { task_id: id });
  });
});
