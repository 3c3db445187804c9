/**
 * What every job of the walk pool carries from the main thread (where the call's target was
 * confined, `treeTarget` in src/main/mcp/deps.ts) to the worker that walks it: the workdir's real
 * root, the normalized target and the path policy's options, from which the worker rebuilds the
 * same `PathPolicy`.
 */
import { PathPolicy, type PathPolicyOptions } from "../../shared/path/policy.ts";

export interface TreeTarget {
  realRoot: string;
  /** Normalized path of the target directory and its segments. */
  path: string;
  segments: string[];
  /** `alias:path`, the prefix of messages. */
  where: string;
  policy: PathPolicyOptions;
}

const policies = new Map<string, PathPolicy>();

/** The policy of a target, compiled once per distinct set of options in each thread. */
export function policyOf(t: TreeTarget): PathPolicy {
  const key = JSON.stringify(t.policy);
  let policy = policies.get(key);
  if (!policy) {
    policy = new PathPolicy(t.policy);
    policies.set(key, policy);
  }
  return policy;
}
