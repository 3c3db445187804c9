/**
 * Opening the regular file a call works on (docs/mcp-tools.md#traversal-by-handle-and-symlinks, docs/mcp-tools.md#special-files): the type is decided from a
 * no-follow stat of the final name before anything is opened, the open itself is non-blocking and
 * never follows a link, and the object actually opened is checked again, so a FIFO, device or
 * symlink swapped in between can neither block the call nor be acted on.
 */
import { type BigIntStats, fstatSync, openSync } from "node:fs";
import { ServerFsError } from "../errors.ts";
import { at, closeQuietly, lstatAt, READ_FLAGS } from "./dir-handle.ts";
import { osError, type Side } from "./os-errors.ts";
import { type EntryType, entryType } from "./stat.ts";

export interface OpenFile {
  fd: number;
  /** From the open handle. */
  st: BigIntStats;
}

/** The code for an object that is not the regular file the call needs. */
export function notAFile(type: Exclude<EntryType, "file">, where: string): ServerFsError {
  switch (type) {
    case "symlink":
      return new ServerFsError("SYMLINK_NOT_ALLOWED", `${where} is a symlink, which is not followed`);
    case "directory":
      return new ServerFsError("NOT_A_FILE", `${where} is a directory, not a file`);
    case "other":
      return new ServerFsError("UNSUPPORTED_FILE_TYPE", `${where} is a FIFO, socket or device`);
  }
}

/** Opens `name` in `dirFd` for reading; missing → PATH_NOT_FOUND. The caller closes `fd`. */
export function openExistingFile(dirFd: number, name: string, where: string, side: Side): OpenFile {
  let type: EntryType;
  try {
    type = entryType(lstatAt(dirFd, name));
  } catch (e) {
    throw osError(e, side, where);
  }
  if (type !== "file") throw notAFile(type, where);
  let fd: number;
  try {
    fd = openSync(at(dirFd, name), READ_FLAGS);
  } catch (e) {
    throw osError(e, side, where);
  }
  try {
    const st = fstatSync(fd, { bigint: true });
    const opened = entryType(st);
    if (opened !== "file") throw notAFile(opened, where);
    return { fd, st };
  } catch (e) {
    closeQuietly(fd);
    throw osError(e, side, where);
  }
}
