/**
 * The last resort of `serverfs mcp` and `serverfs bridge` (src/main/fatal-errors.ts): an error nothing
 * caught is logged without its message, the normal shutdown runs once, and the process exits 1 — when
 * the shutdown is done, or at the bound when it hangs.
 */
import { expect, test } from "bun:test";
import { fatalHandler } from "../../src/main/fatal-errors.ts";
import { AuditLog } from "../../src/shared/audit.ts";
import { poll } from "../helpers/poll.ts";

function harness(shutdown: () => Promise<void> | void, boundMs = 10_000) {
  const lines: Record<string, unknown>[] = [];
  const exits: number[] = [];
  const audit = new AuditLog("info", { write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
  const handle = fatalHandler({ audit, shutdown, boundMs, exit: (code) => exits.push(code) });
  return { lines, exits, handle };
}

test("logged without its message, shut down once, then exit 1", async () => {
  let shutdowns = 0;
  let release: () => void = () => {};
  const h = harness(() => {
    shutdowns++;
    return new Promise<void>((resolve) => {
      release = resolve;
    });
  });
  h.handle("uncaught_exception", new Error("failed on /home/someone/file.txt"));
  h.handle("unhandled_rejection", new TypeError("again /home/someone"));
  expect(shutdowns).toBe(1);
  expect(h.exits).toEqual([]);
  release();
  await poll(() => h.exits.length > 0, 5_000, "the exit");
  expect(h.exits).toEqual([1]);
  expect(h.lines.map((l) => [l["event"], l["level"], l["kind"], l["shutting_down"], l["error_name"]])).toEqual([
    ["fatal_error", "ERROR", "uncaught_exception", false, "Error"],
    ["fatal_error", "ERROR", "unhandled_rejection", true, "TypeError"],
  ]);
  expect(JSON.stringify(h.lines)).not.toContain("someone");
});

test("a shutdown that hangs is cut short at the bound, exit 1 all the same; one that throws still exits 1", async () => {
  const hung = harness(() => new Promise<void>(() => {}), 50);
  hung.handle("uncaught_exception", new Error("x"));
  await poll(() => hung.exits.length > 0, 5_000, "the bound's exit");
  expect(hung.exits).toEqual([1]);

  const failing = harness(() => {
    throw new Error("could not release");
  });
  failing.handle("unhandled_rejection", "not even an Error");
  // a flood of them (a failing log, say) writes a few lines, not one per error
  for (let i = 0; i < 100; i++) failing.handle("uncaught_exception", new Error("again"));
  expect(failing.lines).toHaveLength(3);
  await poll(() => failing.exits.length > 0, 5_000, "the exit");
  expect(failing.exits).toEqual([1]);
  expect(failing.lines[0]).toMatchObject({ event: "fatal_error", kind: "unhandled_rejection", error_name: "string" });
});
