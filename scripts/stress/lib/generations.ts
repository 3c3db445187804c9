/**
 * Bridge generations: every Bridge a ground starts carries `SERVERFS_STRESS_GENERATION=<run>.<n>` in its
 * environment, which every provider and every descendant inherits unless it clears its environment (the
 * documented limit of the proof, docs/reliability.md "Limits of the proof"). After a restart no process
 * of an earlier generation may be alive: that is "every orphan terminated", read from `/proc` and not
 * from anything the Bridge recorded.
 */
import { readdirSync, readFileSync } from "node:fs";
import { readProcStat } from "../../../src/shared/process-group.ts";

export const GENERATION_VARIABLE = "SERVERFS_STRESS_GENERATION";

export const generationEnv = (run: string, n: number): Record<string, string> => ({ [GENERATION_VARIABLE]: `${run}.${n}` });

export interface Tagged {
  pid: number;
  generation: number;
  command: string;
}

/** Live (not zombie) processes of our uid tagged with a generation of `run`. */
export function taggedProcesses(run: string): Tagged[] {
  const prefix = `${GENERATION_VARIABLE}=${run}.`;
  const out: Tagged[] = [];
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) continue;
    const stat = readProcStat(pid);
    if (stat === null || stat.state === "Z" || stat.state === "X") continue;
    let environ: string[];
    try {
      environ = readFileSync(`/proc/${pid}/environ`, "latin1").split("\0");
    } catch {
      continue; // exited meanwhile, or another user's
    }
    const tag = environ.find((e) => e.startsWith(prefix));
    if (tag === undefined) continue;
    let command = "";
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, "latin1").split("\0").slice(0, 3).join(" ").slice(0, 120);
    } catch {
      // exited meanwhile
    }
    out.push({ pid, generation: Number(tag.slice(prefix.length)), command });
  }
  return out;
}

/** The ground's own cleanup at its end: SIGKILL to whatever of its generations is still alive. */
export function killGenerations(run: string): void {
  for (const p of taggedProcesses(run)) {
    try {
      process.kill(p.pid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
}
