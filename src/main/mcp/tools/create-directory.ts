/** `create_directory(workdir, path)` (docs/mcp-tools.md#create_directory): exactly one new directory, never its parents. */
import { mkdirSync } from "node:fs";
import * as v from "valibot";
import { at } from "../../../shared/fs/dir-handle.ts";
import { osError } from "../../../shared/fs/os-errors.ts";
import { revisionOf } from "../../../shared/fs/stat.ts";
import type { McpDeps } from "../deps.ts";
import { clearForCreate, finalStat } from "../mutation/atomic-publish.ts";
import { runMutation } from "../mutation/pipeline.ts";
import { pathParam, workdirParam } from "../params.ts";
import { defineTool } from "../tool.ts";

/** The kernel applies the umask. */
const NEW_DIRECTORY_MODE = 0o777;

const Output = v.strictObject({ workdir: v.string(), path: v.string(), created: v.literal(true), revision: v.string() });

export const createDirectory = (deps: McpDeps) =>
  defineTool({
    name: "create_directory",
    title: "Create a directory",
    description: "Create one new directory (read-write workdirs only). Its parent must already exist; fails if anything exists at the path.",
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    input: v.strictObject({ workdir: workdirParam(), path: pathParam("The directory to create; its parent must exist and nothing may be at the path.") }),
    output: Output,
    unexpected: "MUTATION_FAILED",
    run(args, call) {
      return runMutation(deps, call, {
        tool: "create_directory",
        workdir: args.workdir,
        path: args.path,
        commit(scope) {
          const { where } = scope;
          return scope.inParent("PARENT_NOT_FOUND", async (dirFd, name) => {
            await clearForCreate(dirFd, name, where);
            return scope.exclusive(() => {
              try {
                mkdirSync(at(dirFd, name), NEW_DIRECTORY_MODE);
              } catch (e) {
                throw osError(e, "mutation", where, { EEXIST: "PATH_ALREADY_EXISTS" });
              }
              scope.syncDirectory(dirFd);
              const revision = revisionOf(finalStat(dirFd, name, where));
              call.audit["revision"] = revision;
              return { workdir: scope.ws.alias, path: scope.path, created: true, revision };
            });
          });
        },
      });
    },
  });
