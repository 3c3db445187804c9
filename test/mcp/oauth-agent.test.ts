/**
 * OAuth and the Agent tools (docs/mcp-tools.md#oauth): `serverfs:agent` is its own right, and the
 * Bridge records who delegated a task as the task's `submitter` (docs/task-model.md#the-task-object),
 * from the token's `sub` and client, never the token.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call, treeTables, waitForTask } from "../helpers/bridge.ts";
import { type HttpServer, spawnHttpServer, stopHttpServers } from "../helpers/http-server.ts";
import { type AuthServer, startAuthServer } from "../helpers/oauth-server.ts";
import { answerOf, bearer, openSession, postJson, postModern } from "../helpers/raw-http.ts";
import { useBridge } from "../helpers/use-bridge.ts";
import { writeConfig } from "../helpers/workspace.ts";

const { env, sock } = useBridge();
let as: AuthServer;
let server: HttpServer;
const resource = "https://files.example.org/mcp";

const post = (body: unknown, headers: Record<string, string>) => postJson(`http://127.0.0.1:${server.port}/mcp`, body, headers);
const open = (token: string) => openSession(`http://127.0.0.1:${server.port}/mcp`, bearer(token));

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
    const listed = (await answerOf(await post({ jsonrpc: "2.0", id: 3, method: "tools/list" }, plain)))["result"] as { tools: { name: string }[] };
    expect(listed.tools.map((t) => t.name)).not.toContain("submit_agent_task");
    expect(listed.tools.map((t) => t.name)).not.toContain("get_agent_task");
    const refused = await post(SUBMIT, plain);
    expect(refused.status).toBe(403);
    expect(refused.headers.get("www-authenticate")).toStartWith('Bearer error="insufficient_scope", scope="serverfs:agent"');
    await refused.text();

    const token = await as.clientCredentials(resource, "serverfs:agent");
    const agent = await open(token);
    const result = (await answerOf(await post(SUBMIT, agent)))["result"] as { isError?: boolean; structuredContent: { task_id: string } };
    expect(result.isError).toBeUndefined();
    const task = await call(sock, "task.get", { task_id: result.structuredContent.task_id });
    expect(task["submitter"]).toEqual({ sub: "svc", client_id: "svc" });
    const records = await server.waitFor("tool_call");
    expect(records.at(-1)).toMatchObject({ tool: "submit_agent_task", sub: "svc", client_id: "svc" });
    expect(server.stderr()).not.toContain(token);
  });

  test("on 2026-07-28 without a session, a pending approval's form goes only to the identity that submitted the task", async () => {
    const modern = async (name: string, args: Record<string, unknown>, token: string) => {
      const r = await postModern(
        `http://127.0.0.1:${server.port}/mcp`,
        { id: 1, method: "tools/call", params: { name, arguments: args } },
        { capabilities: { elicitation: { form: {} } }, headers: bearer(token) },
      );
      expect(r.status).toBe(200);
      return r.body["result"] as Record<string, unknown>;
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
