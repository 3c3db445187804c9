/**
 * What `delete_file` and `delete_directory` share (docs/mcp-tools.md#delete_file, #delete_directory):
 * the same parameters (workdir, path, expected_revision), annotations and answer
 * (`{workdir, path, deleted: true, …, revision_deleted}`), run through the mutation pipeline with the
 * removal under the workdir's lock in the entry's parent. Each tool brings only its removal, which
 * checks the revision itself and may add answer fields (delete_file's `bytes_deleted`).
 */
import * as v from "valibot";
import type { McpDeps } from "../deps.ts";
import { runMutation } from "../mutation/pipeline.ts";
import { pathParam, revisionParam, workdirParam } from "../params.ts";
import { defineTool, type ToolDef } from "../tool.ts";

export interface DeleteToolSpec<E extends v.ObjectEntries> {
  name: "delete_file" | "delete_directory";
  title: string;
  description: string;
  /** The path parameter's description. */
  pathAbout: string;
  /** Which tools give the revision to pass. */
  revisionFrom: string;
  /** Answer fields between `deleted` and `revision_deleted`. */
  extraOutput: E;
  /**
   * Removes `name` in `parentFd` if it still has `revision` (or throws), syncing nothing; returns the
   * extra answer fields, which the audit record carries too.
   */
  remove(parentFd: number, name: string, revision: string, where: string): v.InferOutput<v.StrictObjectSchema<E, undefined>>;
}

export function deleteTool<E extends v.ObjectEntries>(deps: McpDeps, spec: DeleteToolSpec<E>): ToolDef {
  return defineTool({
    name: spec.name,
    title: spec.title,
    description: spec.description,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    input: v.strictObject({
      workdir: workdirParam(),
      path: pathParam(spec.pathAbout),
      expected_revision: revisionParam(spec.revisionFrom),
    }),
    output: v.strictObject({
      workdir: v.string(),
      path: v.string(),
      deleted: v.literal(true),
      ...spec.extraOutput,
      revision_deleted: v.string(),
    }),
    unexpected: "MUTATION_FAILED",
    run(args, call) {
      const revision = args.expected_revision;
      return runMutation(deps, call, {
        tool: spec.name,
        workdir: args.workdir,
        path: args.path,
        commit(scope) {
          return scope.exclusive(() =>
            scope.inParent("PATH_NOT_FOUND", (parentFd, name) => {
              const extra = spec.remove(parentFd, name, revision, scope.where);
              scope.syncDirectory(parentFd);
              Object.assign(call.audit, extra, { revision });
              return { workdir: scope.ws.alias, path: scope.path, deleted: true as const, ...extra, revision_deleted: revision };
            }),
          );
        },
      });
    },
  });
}
