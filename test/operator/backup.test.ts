/**
 * `serverfs backup FILE` (docs/deployment.md "Backups"): a consistent copy of the state database taken
 * while a real Bridge runs and writes, 0600, never over an existing file; the CLI only.
 */
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bridgeEnv, call, isTerminalTask } from "../helpers/bridge.ts";
import { runCli } from "../helpers/process.ts";
import { useBridge } from "../helpers/use-bridge.ts";

const { env, submit, waitFor } = useBridge();
const submitOk = (prompt: string) => submit({ prompt });

describe("serverfs backup", () => {
  test("copies every finished task while the Bridge keeps writing; the copy is 0600 and whole", async () => {
    const done = await Promise.all(["complete: one", "complete: two", "complete: three"].map(submitOk));
    for (const id of done) await waitFor(id, isTerminalTask);
    // the Bridge is busy writing events while the copy is taken
    const busy = await submitOk("events:300");
    const file = join(env.dir.path, "backup-1.sqlite3");
    const r = await runCli(["backup", file, "--config", env.configPath, "--json"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.file).toBe(file);
    expect(report.tasks).toBeGreaterThanOrEqual(3);
    expect(report.bytes).toBe(statSync(file).size);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const copy = new Database(file, { readonly: true });
    try {
      const ids = copy
        .query<{ task_id: string }, []>("SELECT task_id FROM tasks")
        .all()
        .map((row) => row.task_id);
      for (const id of done) expect(ids).toContain(id);
      expect(copy.query<{ integrity_check: string }, []>("PRAGMA integrity_check").get()?.integrity_check).toBe("ok");
    } finally {
      copy.close();
    }
    await waitFor(busy, isTerminalTask);
    // the Bridge never noticed
    expect((await call(env.socketPath, "task.get", { task_id: busy }))["status"]).toBe("succeeded");
  }, 30_000);

  test("never overwrites: an existing file is PATH_ALREADY_EXISTS and stays as it was", async () => {
    const file = join(env.dir.path, "taken.sqlite3");
    writeFileSync(file, "precious");
    const r = await runCli(["backup", file, "--config", env.configPath]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("serverfs: PATH_ALREADY_EXISTS: the backup file already exists; choose a new name (a backup never overwrites)\n");
    expect(readFileSync(file, "utf8")).toBe("precious");
  });

  test("into a directory that does not exist: PARENT_NOT_FOUND naming it; under a file: NOT_A_DIRECTORY", async () => {
    const missing = join(env.dir.path, "no-such-dir");
    const r = await runCli(["backup", join(missing, "b.sqlite3"), "--config", env.configPath]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`serverfs: PARENT_NOT_FOUND: the directory ${missing} does not exist; create it, or choose another place\n`);
    const file = env.dir.file("plain-file", "x");
    const under = await runCli(["backup", join(file, "b.sqlite3"), "--config", env.configPath]);
    expect(under.code).toBe(1);
    expect(under.stderr).toStartWith(`serverfs: NOT_A_DIRECTORY: ${file} is not a directory`);
  });

  test("a readable line for a person", async () => {
    const file = join(env.dir.path, "backup-2.sqlite3");
    const r = await runCli(["backup", file, "--config", env.configPath]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^backed up \d+ tasks and \d+ events \(\d+ bytes\) to .*backup-2\.sqlite3\n$/);
  });

  test("no FILE is a usage error; a state directory without a database says so", async () => {
    const usage = await runCli(["backup", "--config", env.configPath]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toStartWith("serverfs: usage error: backup needs the file to write");
    const fresh = bridgeEnv();
    try {
      const r = await runCli(["backup", join(fresh.dir.path, "x.sqlite3"), "--config", fresh.configPath]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^serverfs: PATH_NOT_FOUND: bridge\.state_dir .* holds no state database yet/);
    } finally {
      fresh.dir.remove();
    }
  });
});
