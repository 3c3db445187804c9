/** `list_workdirs()` (docs/mcp-tools.md#list_workdirs): aliases and capabilities, never roots or slots. */
import * as v from "valibot";
import type { McpDeps } from "../deps.ts";
import { defineTool, READ_ONLY } from "../tool.ts";

const Output = v.strictObject({
  workdirs: v.array(
    v.strictObject({
      alias: v.string(),
      description: v.nullable(v.string()),
      access: v.picklist(["read-only", "read-write"]),
      binary_transfer: v.boolean(),
      agent_mode: v.picklist(["disabled", "review", "workspace-write"]),
      agent_runtimes: v.array(v.string()),
    }),
  ),
});

export const listWorkdirs = (deps: McpDeps) =>
  defineTool({
    name: "list_workdirs",
    title: "List workdirs",
    description: "List the configured workdirs (aliases, access, binary transfer, agent mode). Call this first.",
    annotations: READ_ONLY,
    input: v.strictObject({}),
    output: Output,
    bulk: ["workdirs"],
    unexpected: "READ_FAILED",
    run(_args, call) {
      const workdirs = deps.workspaces.list.map((w) => ({
        alias: w.alias,
        description: w.workdir.description,
        access: w.policy.read_only ? "read-only" : "read-write",
        binary_transfer: w.policy.binary_transfer_enabled,
        agent_mode: w.policy.agent_mode,
        agent_runtimes: [...w.policy.agent_runtimes].sort(),
      }));
      call.audit["returned"] = workdirs.length;
      return { workdirs };
    },
  });
