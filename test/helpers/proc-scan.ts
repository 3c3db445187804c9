/** What `/proc` says about processes a test started or a Bridge left behind: liveness, groups, provider marks. */
import { readdirSync, readFileSync } from "node:fs";
import { PROVIDER_MARK_VARIABLE, readProcStat } from "../../src/shared/process-group.ts";

/** Running or sleeping: neither gone nor a zombie waiting to be reaped. */
export const isAlive = (pid: number): boolean => {
  const s = readProcStat(pid);
  return s !== null && s.state !== "Z" && s.state !== "X";
};

/** Live processes matching `pred`. */
export function livePids(pred: (pid: number) => boolean): number[] {
  return readdirSync("/proc")
    .map(Number)
    .filter((pid) => Number.isSafeInteger(pid) && pid > 0 && isAlive(pid) && pred(pid));
}

export const groupMembers = (pgid: number): number[] => livePids((pid) => readProcStat(pid)?.pgrp === pgid);

/** Whether the process's environment carries the provider mark (set at its exec, so not yet in a child still forking). */
export function carriesMark(pid: number, mark: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, "latin1").split("\0").includes(`${PROVIDER_MARK_VARIABLE}=${mark}`);
  } catch {
    return false;
  }
}
