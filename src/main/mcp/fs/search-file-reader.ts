/**
 * Reads whole files for search_text through one no-follow, non-blocking handle each. Anything
 * search skips silently (vanished, unreadable, swapped for a symlink or a special file, over
 * `search_max_file_bytes`) reads as null; only running out of descriptors is an error. One
 * scratch buffer serves the whole search, so scanning a large tree allocates little.
 */
import { fstatSync, readSync } from "node:fs";
import { closeQuietly, READ_FLAGS } from "../../../shared/fs/dir-handle.ts";
import { isExhaustion, osError } from "../../../shared/fs/os-errors.ts";
import { openAt } from "./open-at.ts";

const MIN_SCRATCH = 1 << 16;

export class SearchFileReader {
  private scratch = Buffer.allocUnsafe(MIN_SCRATCH);

  constructor(
    private readonly maxBytes: number,
    private readonly where: string,
  ) {}

  /** The file's bytes, valid until the next call; null when search skips the file. */
  read(dirFd: number, name: string): Buffer | null {
    let fd: number;
    try {
      fd = openAt(dirFd, name, READ_FLAGS);
    } catch (e) {
      if (isExhaustion(e)) throw osError(e, "read", this.where);
      return null;
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile() || st.size > this.maxBytes) return null;
      if (this.scratch.length < st.size) this.scratch = Buffer.allocUnsafe(Math.max(st.size, this.scratch.length * 2));
      let n = 0;
      while (n < st.size) {
        const got = readSync(fd, this.scratch, n, st.size - n, n);
        if (got === 0) break;
        n += got;
      }
      return this.scratch.subarray(0, n);
    } catch (e) {
      if (isExhaustion(e)) throw osError(e, "read", this.where);
      return null;
    } finally {
      closeQuietly(fd);
    }
  }
}
