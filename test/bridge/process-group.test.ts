import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { newMark } from "../../src/shared/ids.ts";
import { checkProcessGroup, PROVIDER_MARK_VARIABLE, readProcStat, terminateProcessGroup } from "../../src/shared/process-group.ts";
import { type ProviderProcess, spawnProvider } from "../../src/workers/providers/spawn.ts";
import { poll } from "../helpers/poll.ts";
import { carriesMark, livePids } from "../helpers/proc-scan.ts";
import { tempDir } from "../helpers/workspace.ts";

const QUICK = { graceMs: 400, verifyMs: 3000, pollMs: 20 };
const dir = tempDir();

interface Started {
  proc: ProviderProcess;
  mark: string;
}

const started: Started[] = [];

function start(script: string): Started {
  const mark = newMark();
  const proc = spawnProvider({ command: ["sh", "-c", script], cwd: dir.path, env: process.env, mark });
  const s = { proc, mark };
  started.push(s);
  return s;
}

afterAll(async () => {
  for (const s of started) await terminateProcessGroup(s.proc.pgid, s.proc.startTime, s.mark, QUICK);
  dir.remove();
});

describe("execution step 3 spawn: own group, start time from /proc", () => {
  test("the child leads its own process group and its start time is field 22 of /proc/<pid>/stat", () => {
    const { proc } = start("sleep 30");
    expect(proc.pgid).toBe(proc.pid);
    const raw = readFileSync(`/proc/${proc.pid}/stat`, "latin1");
    const fields = raw.slice(raw.lastIndexOf(")") + 2).split(" ");
    expect(Number(fields[2])).toBe(proc.pid);
    expect(proc.startTime).toBe(Number(fields[19]));
    expect(readProcStat(process.pid)!.pgrp).not.toBe(proc.pgid);
  });

  test("a command name with spaces and parentheses is parsed after the last ')'", async () => {
    const odd = join(dir.path, "x) 1 (y");
    symlinkSync("/usr/bin/sleep", odd);
    const mark = newMark();
    const proc = spawnProvider({ command: [odd, "30"], cwd: dir.path, env: process.env, mark });
    started.push({ proc, mark });
    await poll(() => readFileSync(`/proc/${proc.pid}/stat`, "latin1").includes("(x) 1 (y)"), 5000);
    const stat = readProcStat(proc.pid)!;
    expect(stat.pgrp).toBe(proc.pid);
    expect(stat.startTime).toBe(proc.startTime);
    expect(stat.state).not.toBe("Z");
  });
});

describe("group check", () => {
  test("no recorded group and no mark cannot be checked", () => {
    expect(checkProcessGroup(null, null, null)).toBe("cannot_check");
    expect(checkProcessGroup(process.pid, null, null)).toBe("cannot_check");
    expect(checkProcessGroup(null, 12345, null)).toBe("cannot_check");
  });

  test("a live leader with the recorded start time is alive", () => {
    const { proc, mark } = start("sleep 30");
    expect(checkProcessGroup(proc.pgid, proc.startTime, mark)).toBe("alive");
  });

  test("the leader's id with a different start time reads gone", () => {
    const { proc } = start("sleep 30");
    expect(checkProcessGroup(proc.pgid, proc.startTime + 1, null)).toBe("gone");
  });

  test("a group whose leader exited is alive while a member remains, gone when none does", async () => {
    const { proc, mark } = start("sleep 30 & exit 0");
    await proc.exited;
    expect(checkProcessGroup(proc.pgid, proc.startTime, null)).toBe("alive");
    const [member] = livePids((pid) => readProcStat(pid)?.pgrp === proc.pgid);
    expect(member).toBeDefined();
    process.kill(member!, "SIGKILL");
    await poll(() => checkProcessGroup(proc.pgid, proc.startTime, mark) === "gone", 5000);
  });

  test("a process that left the group with setsid but keeps the mark is still alive (mark scan)", async () => {
    const { proc, mark } = start("setsid sleep 30 & exit 0");
    await proc.exited;
    // the forked child carries the mark before it has run setsid: wait until it has left the group
    const left = () => livePids((pid) => pid !== proc.pid && carriesMark(pid, mark) && readProcStat(pid)?.pgrp !== proc.pgid);
    await poll(() => left().length === 1, 5000);
    const [stray] = left();
    expect(readProcStat(stray!)!.pgrp).not.toBe(proc.pgid);
    expect(checkProcessGroup(proc.pgid, proc.startTime, mark)).toBe("alive");
    // the recorded group alone (no mark) is empty
    expect(checkProcessGroup(proc.pgid, proc.startTime, null)).toBe("gone");
  });

  test("with only a mark recorded, the mark scan alone decides", async () => {
    const { proc, mark } = start("sleep 30");
    // the mark is in the child's environment from its exec on, a moment after the spawn returns
    await poll(() => carriesMark(proc.pid, mark), 5000, "the child carrying its mark");
    expect(checkProcessGroup(null, null, mark)).toBe("alive");
    expect(checkProcessGroup(null, null, newMark())).toBe("gone");
    process.kill(-proc.pgid, "SIGKILL");
    await proc.exited;
    // the group's last member may still be dying after the leader is reaped
    await poll(() => checkProcessGroup(null, null, mark) === "gone", 5000);
  });
});

describe("terminate", () => {
  test("a live group with a child is terminated and proven gone", async () => {
    const { proc, mark } = start("sleep 30 & sleep 30");
    await poll(() => livePids((pid) => readProcStat(pid)?.pgrp === proc.pgid).length === 3, 5000);
    expect(checkProcessGroup(proc.pgid, proc.startTime, mark)).toBe("alive");
    expect(await terminateProcessGroup(proc.pgid, proc.startTime, mark, QUICK)).toEqual({ proven: true });
    expect(checkProcessGroup(proc.pgid, proc.startTime, mark)).toBe("gone");
    expect(livePids((pid) => readProcStat(pid)?.pgrp === proc.pgid)).toEqual([]);
  });

  test("a group that ignores SIGTERM is SIGKILLed after the grace period", async () => {
    const { proc, mark } = start("trap '' TERM; sleep 30 & wait");
    await poll(() => livePids((pid) => readProcStat(pid)?.pgrp === proc.pgid).length === 2, 5000);
    const began = Date.now();
    expect(await terminateProcessGroup(proc.pgid, proc.startTime, mark, QUICK)).toEqual({ proven: true });
    expect(Date.now() - began).toBeGreaterThanOrEqual(QUICK.graceMs);
    // 128 + SIGKILL (9)
    expect(await proc.exited).toBe(137);
  });

  test("a marked process that left the group with setsid is signalled too", async () => {
    const { proc, mark } = start("setsid sleep 30 & sleep 30");
    // the stray is seen once it has called setsid: until then it is a fork still in the group
    const strays = () => livePids((pid) => carriesMark(pid, mark) && readProcStat(pid)?.pgrp !== proc.pgid);
    await poll(() => livePids((pid) => pid !== proc.pid && carriesMark(pid, mark)).length === 2 && strays().length === 1, 30_000);
    const [stray] = strays();
    expect(stray).toBeDefined();
    expect(await terminateProcessGroup(proc.pgid, proc.startTime, mark, QUICK)).toEqual({ proven: true });
    const after = readProcStat(stray!);
    expect(after === null || after.state === "Z").toBe(true);
    expect(livePids((pid) => carriesMark(pid, mark))).toEqual([]);
  });

  test("a group already gone is proven without signals; one that cannot be checked is not proven", async () => {
    const { proc, mark } = start("exit 0");
    await proc.exited;
    expect(await terminateProcessGroup(proc.pgid, proc.startTime, mark, QUICK)).toEqual({ proven: true });
    expect(await terminateProcessGroup(null, null, null, QUICK)).toEqual({ proven: false });
  });

  test.if(process.getuid?.() === 0)("a member of another uid is never signalled and the stop is not proven", async () => {
    const mark = newMark();
    const other = Bun.spawn({
      cmd: ["sleep", "30"],
      detached: true,
      uid: 65534,
      gid: 65534,
      env: { ...process.env, [PROVIDER_MARK_VARIABLE]: mark },
      stdio: ["ignore", "ignore", "ignore"],
    });
    try {
      const stat = readProcStat(other.pid)!;
      expect(checkProcessGroup(other.pid, stat.startTime, mark)).toBe("alive");
      expect(await terminateProcessGroup(other.pid, stat.startTime, mark, QUICK)).toEqual({ proven: false });
      expect(readProcStat(other.pid)!.state).not.toBe("Z");
    } finally {
      other.kill("SIGKILL");
      await other.exited;
    }
  });
});
