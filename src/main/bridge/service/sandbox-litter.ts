/**
 * Sandbox litter (docs/reliability.md "Agent fidelity"): Codex's sandbox creates empty `.git`,
 * `.codex`, `.agents` and `.aws` directories in the directory it runs in, as mount points for the
 * paths it protects; a command cancelled or timed out mid-run leaves them behind, and an empty `.git`
 * breaks git there. Before a run, note which of those names exist in its start directory; after its
 * process group is proven stopped (and before the lease is released), remove those that did not
 * exist, only if each is still an empty directory.
 *
 * Everything goes through a directory handle opened by the handle walk from the workdir's real root:
 * a path swapped for a symlink meanwhile is never followed, `rmdir` removes only an empty directory,
 * and nothing outside the workdir is touched.
 *
 * Offers `noteLitterBaseline(ws, segments)` → `LitterBaseline | null` and `removeLitter(baseline)`
 * (the names it removed).
 */
import { rmdirSync } from "node:fs";
import { at, lstatAt, withDir } from "../../../shared/fs/dir-handle.ts";
import type { Workspace } from "../../../shared/workspace.ts";

export const LITTER_NAMES = [".git", ".codex", ".agents", ".aws"] as const;

export interface LitterBaseline {
  ws: Workspace;
  /** The start directory's segments from the workdir root. */
  segments: readonly string[];
  /** The names that did not exist when the run began. */
  absent: string[];
}

const missing = (e: unknown): boolean => (e as { code?: string }).code === "ENOENT";

/** Which litter names are absent now; null when the directory cannot be read (then nothing is removed later). */
export function noteLitterBaseline(ws: Workspace, segments: readonly string[]): LitterBaseline | null {
  try {
    const absent = withDir(ws.realRoot, segments, { where: ws.where(segments.join("/")), side: "read" }, (fd) =>
      LITTER_NAMES.filter((name) => {
        try {
          lstatAt(fd, name);
          return false;
        } catch (e) {
          return missing(e);
        }
      }),
    );
    return { ws, segments, absent };
  } catch {
    return null;
  }
}

export function removeLitter(baseline: LitterBaseline): string[] {
  if (baseline.absent.length === 0) return [];
  const { ws, segments } = baseline;
  try {
    return withDir(ws.realRoot, segments, { where: ws.where(segments.join("/")), side: "mutation" }, (fd) =>
      baseline.absent.filter((name) => {
        try {
          if (!lstatAt(fd, name).isDirectory()) return false;
          // rmdir refuses a directory with anything in it (ENOTEMPTY), or one still mounted on (EBUSY)
          rmdirSync(at(fd, name));
          return true;
        } catch {
          return false;
        }
      }),
    );
  } catch {
    return [];
  }
}
