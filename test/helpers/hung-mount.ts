/**
 * A hung filesystem, for real: a separate process opens `/dev/fuse`, mounts a FUSE filesystem on a
 * directory and never reads a request, so every system call that reaches the mount (a `stat`, an
 * `open`, a `readdir`) blocks in the kernel until the connection ends, the way a dead network mount
 * does. `release()` detaches the mount and exits the process, which aborts the connection: every
 * blocked call then fails with ENOTCONN. Needs root and `/dev/fuse`; `hungMountAvailable()` says.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN } from "./workspace.ts";

const HOLDER = `
  import { dlopen, FFIType, ptr } from "bun:ffi";
  import { openSync } from "node:fs";
  const libc = dlopen("libc.so.6", {
    mount: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.u64, FFIType.ptr], returns: FFIType.i32 },
    umount2: { args: [FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
  });
  const c = (s) => ptr(Buffer.from(s + "\\0"));
  const MNT_DETACH = 2;
  const target = process.env.HUNG_TARGET;
  const fd = openSync("/dev/fuse", "r+");
  const mounted = libc.symbols.mount(c("serverfs-hung"), c(target), c("fuse.serverfs-hung"), 0n, c("fd=" + fd + ",rootmode=40000,user_id=0,group_id=0"));
  console.log(mounted === 0 ? "mounted" : "unavailable");
  if (mounted !== 0) process.exit(0);
  process.stdin.on("data", () => {});
  process.stdin.on("end", () => {
    libc.symbols.umount2(c(target), MNT_DETACH);
    process.exit(0);
  });
`;

export interface HungMount {
  /** Ends the hang: blocked calls fail, the directory is an empty directory again. */
  release(): Promise<void>;
}

export async function hangMount(target: string): Promise<HungMount> {
  const proc = Bun.spawn([BUN, "-e", HOLDER], { env: { ...process.env, HUNG_TARGET: target }, stdin: "pipe", stdout: "pipe", stderr: "ignore" });
  const reader = proc.stdout.getReader();
  let out = "";
  while (!out.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    out += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  if (out.trim() !== "mounted") {
    proc.kill();
    throw new Error(`the hung mount could not be set up (${out.trim() || "no answer"})`);
  }
  return {
    async release() {
      proc.stdin.end();
      await Promise.race([proc.exited, Bun.sleep(5000)]);
      proc.kill("SIGKILL");
      // A holder killed before it could detach leaves the (then dead) mount behind.
      if (mounted(target)) Bun.spawnSync(["umount", "-l", target]);
    },
  };
}

const mounted = (target: string): boolean =>
  readFileSync("/proc/mounts", "utf8")
    .split("\n")
    .some((l) => l.split(" ")[1] === target);

/** Whether this machine lets a test mount a hung filesystem (root and /dev/fuse): tried once, for real. */
export function hungMountAvailable(): boolean {
  if (process.getuid?.() !== 0 || !existsSync("/dev/fuse")) return false;
  const dir = mkdtempSync(join(tmpdir(), "serverfs-hung-probe-"));
  try {
    const r = Bun.spawnSync([BUN, "-e", HOLDER], { env: { ...process.env, HUNG_TARGET: dir }, stdin: "ignore", stdout: "pipe", stderr: "ignore" });
    return r.stdout.toString().trim() === "mounted";
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
