/**
 * Reads whole files for search_text through one no-follow, non-blocking handle each. Anything
 * search skips silently (vanished, unreadable, swapped for a symlink or a special file, over
 * `search_max_file_bytes`) reads as null; only running out of descriptors is an error.
 *
 * Each walk-pool worker has one reader, whose scratch buffer serves every file of every search it
 * runs, so memory grows with the number of workers, never with the number of calls: at most
 * `search_workers` × `search_max_file_bytes` (docs/reliability.md, "Hardening"). A scratch grown
 * past `KEEP_SCRATCH` is let go once its worker has had no search for `IDLE_MS`, so one large file
 * does not pin its size for good (dropping it after every search would make each search allocate
 * afresh, faster than the collector frees).
 */
import { fstatSync, readSync } from "node:fs";
import { closeQuietly, READ_FLAGS } from "../../shared/fs/dir-handle.ts";
import { isExhaustion, osError } from "../../shared/fs/os-errors.ts";
import { openAt } from "./open-at.ts";

const MIN_SCRATCH = 1 << 16;
const KEEP_SCRATCH = 1 << 22;
const IDLE_MS = 5000;

export class SearchFileReader {
  private scratch = Buffer.allocUnsafe(MIN_SCRATCH);
  private idleTimer: ReturnType<typeof setTimeout> | undefined;

  /** The file's bytes, valid until the next call; null when search skips the file. */
  read(dirFd: number, name: string, maxBytes: number, where: string): Buffer | null {
    let fd: number;
    try {
      fd = openAt(dirFd, name, READ_FLAGS);
    } catch (e) {
      if (isExhaustion(e)) throw osError(e, "read", where);
      return null;
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile() || st.size > maxBytes) return null;
      if (this.scratch.length < st.size) this.scratch = Buffer.allocUnsafe(Math.max(st.size, this.scratch.length * 2));
      let n = 0;
      while (n < st.size) {
        const got = readSync(fd, this.scratch, n, st.size - n, n);
        if (got === 0) break;
        n += got;
      }
      return this.scratch.subarray(0, n);
    } catch (e) {
      if (isExhaustion(e)) throw osError(e, "read", where);
      return null;
    } finally {
      closeQuietly(fd);
    }
  }

  /** Called after each search: a large scratch goes back to the allocator unless another search comes soon. */
  trim(): void {
    clearTimeout(this.idleTimer);
    if (this.scratch.length <= KEEP_SCRATCH) return;
    this.idleTimer = setTimeout(() => {
      this.scratch = Buffer.allocUnsafe(MIN_SCRATCH);
    }, IDLE_MS);
    this.idleTimer.unref();
  }
}
