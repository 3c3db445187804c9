/**
 * OAuth and the Agent tools (docs/mcp-tools.md#oauth): `serverfs:agent` is its own right, and the
 * Bridge records who delegated a task as the task's `submitter` (docs/task-model.md#the-task-object),
 * from the token's `sub` and client, never the token.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call, treeTables, waitForTask } from "../helpers/bridge.ts";
import { type HttpServer, spawnHttpServer, stopHttpServers } from "../helpers/http-server.ts";
import { type AuthServer, startAuthServer } from "../helpers/oauth-server.ts";
import { useBridge } from "../helpers/use-bridge.ts";
import { writeConfig } from "../helpers/workspace.ts";

const { env, sock } = useBridge();
let as: AuthServer;
let server: HttpServer;
const resource = "https://files.example.org/mcp";

const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
};

function post(body: unknown, headers: Record<string, string>) {
  return fetch(`http://127.0.0.1:${server.port}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(body),
  });
}

async function answer(r: Response): Promise<Record<string, unknown>> {
  const text = await r.text();
  const data = text.startsWith("{") ? text : (text.split("\n").find((l) => l.startsWith("data: ")) ?? "").slice(6);
  return JSON.parse(data) as Record<string, unknown>;
}

async function open(token: string): Promise<Record<string, string>> {
  const r = await post(INIT, { authorization: `Bearer ${token}` });
  expect(r.status).toBe(200);
  await r.text();
  const session = { authorization: `Bearer ${token}`, "mcp-session-id": r.headers.get("mcp-session-id")!, "mcp-protocol-version": "2025-06-18" };
  await (await post({ jsonrpc: "2.0", method: "notifications/initialized" }, session)).text();
  return session;
}

const SUBMIT = {
  jsonrpc: "2.0",
  id: 2,
  method: "tools/call",
  params: { name: "submit_agent_task", arguments: { runtime: "fake", workdir: "repo", prompt: "say hi", profile: "review" } },
};

beforeAll(async () => {
  as = await startAuthServer();
  // the resource is the public URL behind a proxy: it need not be the address ServerFS listens on
  const config = writeConfig(env.dir.path, { ...treeTables(env), server: { http: { oauth: { issuer: as.issuer, resource } } } }, "mcp-oauth.toml");
  server = await spawnHttpServer(config);
});

afterAll(async () => {
  stopHttpServers();
  await as?.close();
});

describe("serverfs:agent", () => {
  test("without it the Agent tools are not listed and a submit is a 403 naming serverfs:agent; with it the task records its submitter", async () => {
    const plain = await open(await as.clientCredentials(resource, "serverfs:read serverfs:write"));
    const listed = (await answer(await post({ jsonrpc: "2.0", id: 3, method: "tools/list" }, plain)))["result"] as { tools: { name: string }[] };
    expect(listed.tools.map((t) => t.name)).not.toContain("submit_agent_task");
    expect(listed.tools.map((t) => t.name)).not.toContain("get_agent_task");
    const refused = await post(SUBMIT, plain);
    expect(refused.status).toBe(403);
    expect(refused.headers.get("www-authenticate")).toStartWith('Bearer error="insufficient_scope", scope="serverfs:agent"');
    await refused.text();

    const token = await as.clientCredentials(resource, "serverfs:agent");
    const agent = await open(token);
    const result = (await answer(await post(SUBMIT, agent)))["result"] as { isError?: boolean; structuredContent: { task_id: string } };
    expect(result.isError).toBeUndefined();
    const task = await call(sock, "task.get", { task_id: result.structuredContent.task_id });
    expect(task["submitter"]).toEqual({ sub: "svc", client_id: "svc" });
    const records = await server.waitFor("tool_call");
    expect(records.at(-1)).toMatchObject({ tool: "submit_agent_task", sub: "svc", client_id: "svc" });
    expect(server.stderr()).not.toContain(token);
  });

  test("on 2026-07-28 without a session, a pending approval's form goes only to the identity that submitted the task", async () => {
    const modern = async (name: string, args: Record<string, unknown>, token: string) => {
      const r = await fetch(`http://127.0.0.1:${server.port}/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          authorization: `Bearer ${token}`,
          "mcp-protocol-version": "2026-07-28",
          "mcp-method": "tools/call",
          "mcp-name": name,
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: {
            name,
            arguments: args,
            _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {} } } },
          },
        }),
      });
      expect(r.status).toBe(200);
      return (await answer(r))["result"] as Record<string, unknown>;
    };
    const submitter = await as.clientCredentials(resource, "serverfs:agent");
    const submitted = await modern("submit_agent_task", { runtime: "fake", workdir: "repo", prompt: "approval:whose form", profile: "review" }, submitter);
    const taskId = (submitted["structuredContent"] as { task_id: string }).task_id;
    await waitForTask(sock, taskId, (t) => t["status"] === "waiting_for_approval");
    // another valid identity with the same rights reads the task, but is not handed the human's form
    const other = await modern("get_agent_task", { task_id: taskId }, await as.forge({ aud: resource, sub: "mallory", client_id: "other" }));
    expect(other["resultType"]).toBe("complete");
    expect(other["structuredContent"]).toMatchObject({ status: "waiting_for_approval" });
    const own = await modern("get_agent_task", { task_id: taskId }, submitter);
    expect(own["resultType"]).toBe("input_required");
    expect(Object.keys(own["inputRequests"] as object)).toHaveLength(1);
    await call(sock, "task.cancel", { task_id: taskId });
  });

  test("a task submitted without OAuth has no submitter", async () => {
    const id = await call<{ task_id: string }>(sock, "task.submit", { runtime: "fake", workdir: "repo", path: "", profile: "review", prompt: "x" });
    expect((await call(sock, "task.get", { task_id: id.task_id }))["submitter"]).toBeNull();
  });
});
