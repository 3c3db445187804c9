/**
 * Reading a small file the user names that must be a regular file (a config file, a host's config,
 * a token file) without ever hanging on whatever is there instead: a plain read of a FIFO blocks
 * until some writer comes, and a device or a socket is nothing to parse. The path is stat-ed first,
 * so nothing but a regular file is ever opened; the open is O_NONBLOCK, so a FIFO swapped in after
 * the stat cannot block it either; and the opened file is checked again, so what is read (and the
 * owner and mode the caller checks) is what was checked. Symbolic links are followed, as any read of
 * a config file follows them.
 */
import { closeSync, constants, fstatSync, openSync, readFileSync, type Stats, statSync } from "node:fs";
import { O_CLOEXEC } from "./dir-handle.ts";

const FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY | O_CLOEXEC;

export interface RegularFile {
  text: string;
  /** The opened file's own stat: its owner and mode are the ones of the text read. */
  stat: Stats;
}

/** What stands at a path instead of a regular file, as a message says it. */
function kindOf(st: Stats): string {
  if (st.isDirectory()) return "a directory";
  if (st.isFIFO()) return "a FIFO";
  if (st.isSocket()) return "a socket";
  return "a device";
}

/**
 * The UTF-8 text of the regular file at `path`. Anything else there throws `notRegular("a FIFO")`
 * (or "a directory", "a socket", "a device"); an OS error (no such file, no permission) is thrown as
 * it is, for the caller to word.
 */
export function readRegularFile(path: string, notRegular: (kind: string) => Error): RegularFile {
  const before = statSync(path);
  if (!before.isFile()) throw notRegular(kindOf(before));
  const fd = openSync(path, FLAGS);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw notRegular(kindOf(stat));
    return { text: readFileSync(fd, "utf8"), stat };
  } finally {
    closeSync(fd);
  }
}
