/**
 * One configured workdir as both roles use it at run time: its alias and slot, its real root
 * (resolved once at startup), its frozen effective policy and the path policy built from it.
 */
import { realpathSync } from "node:fs";
import type { Config, Workdir } from "./config/load.ts";
import type { Policy } from "./config/schema.ts";
import { confinePath, type NormalizedPath, PathPolicy } from "./path/policy.ts";

export class Workspace {
  readonly pathPolicy: PathPolicy;
  readonly realRoot: string;

  constructor(readonly workdir: Workdir) {
    this.pathPolicy = new PathPolicy(workdir.policy);
    this.realRoot = realpathSync(workdir.root);
  }

  get alias(): string {
    return this.workdir.alias;
  }
  get slot(): number {
    return this.workdir.slot;
  }
  get policy(): Policy {
    return this.workdir.policy;
  }

  confine(path: string): NormalizedPath {
    return confinePath(this.alias, path, this.pathPolicy);
  }

  where(path: string): string {
    return `${this.alias}:${path}`;
  }
}

export class Workspaces {
  private readonly byAlias = new Map<string, Workspace>();
  readonly list: Workspace[];

  constructor(config: Config) {
    this.list = [...config.workdirs].sort((a, b) => a.slot - b.slot).map((w) => new Workspace(w));
    for (const w of this.list) this.byAlias.set(w.alias, w);
  }

  get(alias: string): Workspace | undefined {
    return this.byAlias.get(alias);
  }
}
