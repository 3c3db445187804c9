/** What a server process holds, read from /proc: its Worker threads and its open descriptors. */
import { readdirSync, readFileSync } from "node:fs";

/**
 * The process's Worker threads (Bun names them so); its other threads (JIT, GC) come and go. A thread a
 * worker starts carries the name "Worker" until it names itself, so one reading may count one more
 * for a moment: poll for the count that is the fact.
 */
export const workerThreads = (pid: number): number =>
  readdirSync(`/proc/${pid}/task`).filter((t) => {
    try {
      return readFileSync(`/proc/${pid}/task/${t}/comm`, "utf8").trim() === "Worker";
    } catch {
      return false;
    }
  }).length;

export const openFds = (pid: number): number => readdirSync(`/proc/${pid}/fd`).length;
