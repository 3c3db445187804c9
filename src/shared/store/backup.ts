/**
 * An online copy of the state database (docs/deployment.md "Backups"): `VACUUM INTO` reads one
 * consistent snapshot through an ordinary connection, so the Bridge keeps serving and writing while
 * it runs (WAL readers never block the writer). The target is created here first, empty, 0600 and
 * exclusively — SQLite accepts an empty file as the target — so the copy is never readable by others,
 * not even for an instant, and an existing file is never overwritten.
 */
import { Database } from "bun:sqlite";
import { closeSync, constants, fsyncSync, openSync, rmSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { ServerFsError } from "../errors.ts";
import { O_CLOEXEC } from "../fs/dir-handle.ts";
import { PRIVATE_FILE } from "../fs/modes.ts";
import { errnoReason, osCode } from "../fs/os-errors.ts";

export interface BackupReport {
  bytes: number;
  tasks: number;
  events: number;
}

export function backupDatabase(db: Database, target: string): BackupReport {
  let fd: number;
  try {
    fd = openSync(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW | O_CLOEXEC, PRIVATE_FILE);
  } catch (e) {
    const code = osCode(e);
    if (code === "EEXIST") throw new ServerFsError("PATH_ALREADY_EXISTS", "the backup file already exists; choose a new name (a backup never overwrites)");
    // the operator's own command: naming their directory is what tells them what to fix
    if (code === "ENOENT") throw new ServerFsError("PARENT_NOT_FOUND", `the directory ${dirname(target)} does not exist; create it, or choose another place`);
    if (code === "ENOTDIR") throw new ServerFsError("NOT_A_DIRECTORY", `${dirname(target)} is not a directory; choose another place for the backup`);
    throw new ServerFsError("MUTATION_IO_ERROR", `the backup file cannot be created (${errnoReason(e)})`);
  }
  closeSync(fd);
  try {
    db.run("VACUUM INTO ?", [target]);
  } catch (e) {
    // a partial copy is no backup: it must not be mistaken for one
    rmSync(target, { force: true });
    throw new ServerFsError("MUTATION_IO_ERROR", `the backup could not be written (${e instanceof Error && "code" in e ? String(e.code) : "SQLite error"})`);
  }
  // the copy is complete on disk before it is reported
  const sync = openSync(target, constants.O_RDONLY | O_CLOEXEC);
  try {
    fsyncSync(sync);
  } finally {
    closeSync(sync);
  }
  const copy = new Database(target, { readonly: true });
  try {
    const ok = copy.query<{ integrity_check: string }, []>("PRAGMA integrity_check").get();
    if (ok?.integrity_check !== "ok") throw new ServerFsError("MUTATION_IO_ERROR", "the backup failed its integrity check");
    const count = (table: string) => copy.query<{ n: number }, []>(`SELECT count(*) AS n FROM ${table}`).get()?.n ?? 0;
    return { bytes: statSync(target).size, tasks: count("tasks"), events: count("events") };
  } finally {
    copy.close();
  }
}
