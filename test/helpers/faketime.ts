/**
 * A step of the system clock for one process tree, without root: libfaketime (Debian's `faketime`
 * package; .ci/run installs it) preloaded into the process, reading its offset from a file on every
 * call (`FAKETIME_NO_CACHE`), so the test steps the wall clock mid-run by rewriting the file. Only the
 * wall clock moves (`DONT_FAKE_MONOTONIC`), as with `date -s` or an NTP step: CLOCK_MONOTONIC, which
 * Bun's timers and `performance.now()` read, does not. File times are left alone (`NO_FAKE_STAT`). The
 * multi-threaded build is used, since the Bridge runs workers. Checked: under it Bun's `Date.now()`
 * follows the file, `performance.now()` and timers do not.
 *
 * Offers `libfaketime()` (its path, or null where the package is absent) and `SteppedClock`.
 */
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export function libfaketime(): string | null {
  for (const dir of readdirSync("/usr/lib", { withFileTypes: true })) {
    const lib = join("/usr/lib", dir.name, "faketime", "libfaketimeMT.so.1");
    if (dir.isDirectory() && existsSync(lib)) return lib;
  }
  return null;
}

export class SteppedClock {
  private readonly file: string;

  constructor(
    dir: string,
    private readonly lib: string,
  ) {
    this.file = join(dir, "faketime-offset");
    this.step("+0");
  }

  /** The environment that puts a process (and its children) on this clock. */
  env(): Record<string, string> {
    return { LD_PRELOAD: this.lib, FAKETIME_TIMESTAMP_FILE: this.file, FAKETIME_NO_CACHE: "1", DONT_FAKE_MONOTONIC: "1", NO_FAKE_STAT: "1" };
  }

  /** Sets the offset from the real time, in libfaketime's relative form: `+2h`, `-1h`, `+0`. */
  step(offset: string): void {
    writeFileSync(this.file, `${offset}\n`);
  }
}
