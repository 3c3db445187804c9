import { describe, expect, test } from "bun:test";
import { runCli } from "../helpers/process.ts";

describe("config.md serverfs demo", () => {
  test("the demo runs every step against a real Bridge and MCP server and exits 0", async () => {
    const r = await runCli(["demo"]);
    expect(r.stdout).toContain("All 10 steps held");
    expect(r.stdout).not.toContain("FAILED");
    expect(r.code).toBe(0);
  }, 60_000);
});
