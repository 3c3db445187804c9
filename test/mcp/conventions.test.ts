import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { errorCode, type McpSession, structured } from "../helpers/mcp-client.ts";
import { startInProcess } from "../helpers/mcp-in-process.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

let dir: TempDir;
let mcp: McpSession;

beforeAll(async () => {
  dir = tempDir();
  dir.file("ws/a.txt", "hello\n");
  const config = writeConfig(dir.path, { workdirs: [{ slot: 1, alias: "repo", path: `${dir.path}/ws` }] });
  mcp = await startInProcess(config);
});
afterAll(async () => {
  await mcp.close();
  dir.remove();
});

describe("server identity", () => {
  test("serverInfo names ServerFS with the package version; tools and resources do not list-change", () => {
    expect(mcp.client.getServerVersion()).toEqual({ name: "ServerFS", version: "0.7.0" });
    const caps = mcp.client.getServerCapabilities();
    expect(caps?.tools).toEqual({ listChanged: false });
    expect(caps?.resources).toEqual({ listChanged: false });
    expect(caps?.prompts).toBeUndefined();
    expect(caps?.logging).toBeUndefined();
  });
});

describe("errors", () => {
  test("an unknown tool is a JSON-RPC error, not a tool result", async () => {
    await expect(mcp.call("no_such_tool")).rejects.toThrow(/Unknown tool/);
  });
  test("a failure is CODE: message with isError", async () => {
    const r = await mcp.call("stat_file", { workdir: "repo", path: "../x" });
    expect(errorCode(r)).toBe("PATH_OUTSIDE_WORKDIR");
    expect(r.structuredContent).toBeUndefined();
  });
});

describe("results", () => {
  test("content is exactly one text block holding the compact JSON of structuredContent", async () => {
    const r = await mcp.call("stat_file", { workdir: "repo", path: "a.txt" });
    const s = structured(r);
    expect(r.content).toHaveLength(1);
    expect((r.content[0] as { text: string }).text).toBe(JSON.stringify(s));
  });
});
