/**
 * Reading one directory completely through its handle (docs/mcp-tools.md#read-tools): names that are not
 * valid UTF-8 are dropped, the rest come sorted in ascending byte order of their UTF-8 names, each
 * with the no-follow type the directory itself reports.
 */
import { DT, readDirents } from "../../shared/ffi/dirents.ts";

/** `unknown` when the filesystem does not report types; the caller then lstats the entry. */
export type EntryKind = "file" | "directory" | "symlink" | "other" | "unknown";

export interface DirEntry {
  name: string;
  kind: EntryKind;
}

/** The normalized path of `name` inside the directory at normalized path `parent`. */
export const childPath = (parent: string, name: string): string => (parent === "" ? name : `${parent}/${name}`);

function kindOf(type: number): EntryKind {
  switch (type) {
    case DT.REG:
      return "file";
    case DT.DIR:
      return "directory";
    case DT.LNK:
      return "symlink";
    case DT.FIFO:
    case DT.SOCK:
    case DT.BLK:
    case DT.CHR:
      return "other";
    default:
      return "unknown";
  }
}

/**
 * Names without a code unit from U+D800 up compare in UTF-16 code-unit order exactly as in UTF-8 byte
 * order (the two part only where a surrogate meets U+E000–U+FFFF), so most directories sort without
 * encoding a single name; the rest are sorted by their encoded bytes.
 */
const ABOVE_SURROGATES = /[\uD800-\uFFFF]/;

/** Every valid entry of the directory `dirFd` holds, sorted by UTF-8 bytes. OS errors propagate raw. */
export function readDirEntries(dirFd: number): DirEntry[] {
  const entries: DirEntry[] = [];
  for (const d of readDirents(dirFd)) if (d.name !== null) entries.push({ name: d.name, kind: kindOf(d.type) });
  if (!entries.some((e) => ABOVE_SURROGATES.test(e.name))) return entries.sort((a, b) => (a.name < b.name ? -1 : 1));
  const keyed = entries.map((entry) => ({ key: Buffer.from(entry.name, "utf8"), entry }));
  keyed.sort((a, b) => Buffer.compare(a.key, b.key));
  return keyed.map((k) => k.entry);
}
