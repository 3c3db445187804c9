/**
 * Reading one directory completely through its handle (docs/mcp-tools.md#read-tools): names that are not
 * valid UTF-8 are dropped, the rest come sorted in ascending byte order of their UTF-8 names, each
 * with the no-follow type the directory itself reports.
 */
import { type Dirent, readdirSync } from "node:fs";
import { self } from "../../../shared/fs/dir-handle.ts";
import { decodeStrict } from "../../../shared/utf8.ts";

/** `unknown` when the filesystem does not report types; the caller then lstats the entry. */
export type EntryKind = "file" | "directory" | "symlink" | "other" | "unknown";

export interface DirEntry {
  name: string;
  kind: EntryKind;
}

/** The normalized path of `name` inside the directory at normalized path `parent`. */
export const childPath = (parent: string, name: string): string => (parent === "" ? name : `${parent}/${name}`);

function kindOf(d: Dirent): EntryKind {
  if (d.isFile()) return "file";
  if (d.isDirectory()) return "directory";
  if (d.isSymbolicLink()) return "symlink";
  if (d.isFIFO() || d.isSocket() || d.isBlockDevice() || d.isCharacterDevice()) return "other";
  return "unknown";
}

/**
 * Names decode lossily to strings, where an invalid byte becomes U+FFFD. Only when some name holds
 * U+FFFD are the raw names read as well, to tell an invalid name from one that really holds it.
 */
function dropInvalidNames(dirFd: number, dirents: Dirent[]): Dirent[] {
  if (!dirents.some((d) => d.name.includes("\uFFFD"))) return dirents;
  const valid = new Set<string>();
  for (const raw of readdirSync(self(dirFd), { encoding: "buffer" })) {
    const name = decodeStrict(raw);
    if (name !== null) valid.add(name);
  }
  const seen = new Set<string>();
  return dirents.filter((d) => {
    if (!d.name.includes("\uFFFD")) return true;
    if (!valid.has(d.name) || seen.has(d.name)) return false;
    seen.add(d.name);
    return true;
  });
}

/**
 * Names without a code unit from U+D800 up compare in UTF-16 code-unit order exactly as in UTF-8 byte
 * order (the two part only where a surrogate meets U+E000–U+FFFF), so most directories sort without
 * encoding a single name; the rest are sorted by their encoded bytes.
 */
const ABOVE_SURROGATES = /[\uD800-\uFFFF]/;

/** Every valid entry of the directory `dirFd` holds, sorted by UTF-8 bytes. OS errors propagate raw. */
export function readDirEntries(dirFd: number): DirEntry[] {
  const entries = dropInvalidNames(dirFd, readdirSync(self(dirFd), { withFileTypes: true })).map((d) => ({ name: d.name, kind: kindOf(d) }));
  if (!entries.some((e) => ABOVE_SURROGATES.test(e.name))) return entries.sort((a, b) => (a.name < b.name ? -1 : 1));
  const keyed = entries.map((entry) => ({ key: Buffer.from(entry.name, "utf8"), entry }));
  keyed.sort((a, b) => Buffer.compare(a.key, b.key));
  return keyed.map((k) => k.entry);
}
