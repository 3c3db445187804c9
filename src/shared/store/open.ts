/**
 * Opening one connection to `state_dir/state.sqlite3` (docs/task-model.md#the-state-database). Every thread opens its own;
 * only the main thread passes `migrate: true`, which also switches the file to WAL (the journal mode
 * is a property of the file, so the other connections inherit it).
 *
 * Offers: `openDatabase(stateDir, { migrate, onMissing })` → the connection and the identity (device,
 * inode) of the file it opened; `DB_FILE`; `sameFile(path, identity)`.
 *
 * A database lost (docs/reliability.md#the-state-database-stays-the-one-open): the main thread writes
 * `state.created` beside the database once it has one, so a later start that finds the marker (or the
 * `-wal` / `-shm` files) but no database knows one existed and says so (`onMissing`). The leftover
 * `-wal` / `-shm` of a lost database are set aside as `*.lost` first, so SQLite never reads them as the
 * new database's.
 *
 * Safety: `state_dir` must be a real directory owned by this uid and is set to 0700; the database and
 * its `-wal` / `-shm` files must be regular files owned by this uid (checked before SQLite can touch
 * them, and again after the connection opens, when each is set to 0600). Any violation is
 * `STATE_DIR_UNSAFE`. The database files are never opened outside SQLite: POSIX record locks belong
 * to the process, and closing any descriptor of a file drops every lock the process holds on it —
 * SQLite's WAL locks included, after which another process takes the live `-shm` for an abandoned
 * one, checkpoints and deletes the `-wal` under the Bridge. So they are checked with `lstat` (never
 * following a symlink) and set to 0600 with `chmod`, re-checked to be the same entry afterwards.
 */
import { Database, SQLiteError, constants as sqlite } from "bun:sqlite";
import { chmodSync, closeSync, constants, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, renameSync, type Stats, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ServerFsError } from "../errors.ts";
import { O_CLOEXEC } from "../fs/dir-handle.ts";
import { ownUid, PRIVATE_DIR, PRIVATE_FILE, permissionBits } from "../fs/modes.ts";
import { isStorageFault } from "../storage-fault.ts";
import { type MigratedFrom, migrate } from "./migrate.ts";

export const DB_FILE = "state.sqlite3";
const SIDE_FILES = [`${DB_FILE}-wal`, `${DB_FILE}-shm`] as const;
const DB_FILES = [DB_FILE, ...SIDE_FILES] as const;
/** Written once a database exists here: evidence, at a later start, that a missing one was lost. */
export const MARKER_FILE = "state.created";

export interface FileIdentity {
  dev: number;
  ino: number;
}

export interface OpenOptions {
  /** Main thread only: set WAL and run the docs/task-model.md#the-state-database migration before returning. */
  migrate?: boolean;
  /** Told what the migration started from (the Bridge logs it). */
  onMigrated?: (from: MigratedFrom) => void;
  /** With `migrate`: the database is missing while the state directory shows it existed (the names that show it). */
  onMissing?: (evidence: string[]) => void;
}

const unsafeDir = () => new ServerFsError("STATE_DIR_UNSAFE", "state_dir is not a private directory of the Bridge user");
const unsafeFile = () => new ServerFsError("STATE_DIR_UNSAFE", "a state database file is not a private regular file");

function errnoOf(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | null)?.code;
}

/** Creates `state_dir` (0700) if missing, refuses anything but our own real directory, sets 0700. */
function secureStateDir(stateDir: string): void {
  try {
    mkdirSync(stateDir, { recursive: true, mode: PRIVATE_DIR });
  } catch {
    throw unsafeDir();
  }
  let fd: number;
  try {
    fd = openSync(stateDir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | O_CLOEXEC);
  } catch {
    throw unsafeDir();
  }
  try {
    const st = fstatSync(fd);
    if (!st.isDirectory() || st.uid !== ownUid()) throw unsafeDir();
    if (permissionBits(st.mode) !== PRIVATE_DIR) fchmodSync(fd, PRIVATE_DIR);
  } finally {
    closeSync(fd);
  }
}

/** The entry at `path` by `lstat` (never following a symlink), null when missing; it must be our regular file. */
function ownRegularFile(path: string): Stats | null {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (e) {
    if (errnoOf(e) === "ENOENT") return null;
    throw unsafeFile();
  }
  if (!st.isFile() || st.uid !== ownUid()) throw unsafeFile();
  return st;
}

/** After the connection opened: each file that exists is checked again, set to 0600, and must still be that entry. */
function privatize(path: string): void {
  const st = ownRegularFile(path);
  if (st === null || permissionBits(st.mode) === PRIVATE_FILE) return;
  try {
    chmodSync(path, PRIVATE_FILE);
  } catch {
    throw unsafeFile();
  }
  const after = ownRegularFile(path);
  if (after === null || after.ino !== st.ino || after.dev !== st.dev || permissionBits(after.mode) !== PRIVATE_FILE) throw unsafeFile();
}

/** Whether `path` still names the file `identity` was taken from (false when it is gone or another entry). */
export function sameFile(path: string, identity: FileIdentity): boolean {
  try {
    const st = lstatSync(path);
    return st.dev === identity.dev && st.ino === identity.ino;
  } catch (e) {
    // only a missing entry is a loss; a stat that fails otherwise tells nothing
    const code = errnoOf(e);
    return code !== "ENOENT" && code !== "ENOTDIR";
  }
}

/** No database, but a marker or side files: log it, and set the side files aside before SQLite sees them. */
function noticeLostDatabase(stateDir: string, onMissing: ((evidence: string[]) => void) | undefined): void {
  if (ownRegularFile(join(stateDir, DB_FILE)) !== null) return;
  const evidence = [MARKER_FILE, ...SIDE_FILES].filter((name) => lstatOrNull(join(stateDir, name)) !== null);
  if (evidence.length === 0) return;
  for (const name of SIDE_FILES) {
    // set aside only our own regular files: anything else stays STATE_DIR_UNSAFE, as at any start
    if (!evidence.includes(name) || ownRegularFile(join(stateDir, name)) === null) continue;
    try {
      renameSync(join(stateDir, name), join(stateDir, `${name}.lost`));
    } catch {
      throw unsafeFile();
    }
  }
  onMissing?.(evidence);
}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

/**
 * The marker, written once (create-only, so never through a link planted there). A disk too full for
 * it does not stop the start: it is evidence only, and the next start writes it.
 */
function writeMarker(stateDir: string): void {
  try {
    writeFileSync(join(stateDir, MARKER_FILE), `${JSON.stringify({ created_at: new Date().toISOString() })}\n`, { mode: PRIVATE_FILE, flag: "wx" });
  } catch (e) {
    if (errnoOf(e) !== "EEXIST" && !isStorageFault(e)) throw unsafeFile();
  }
}

export function openDatabase(stateDir: string, opts: OpenOptions = {}): { db: Database; identity: FileIdentity } {
  secureStateDir(stateDir);
  if (opts.migrate) noticeLostDatabase(stateDir, opts.onMissing);
  // before SQLite opens anything: an existing entry must already be one of our regular files
  for (const name of DB_FILES) ownRegularFile(join(stateDir, name));

  let db: Database;
  try {
    db = new Database(join(stateDir, DB_FILE), sqlite.SQLITE_OPEN_READWRITE | sqlite.SQLITE_OPEN_CREATE | sqlite.SQLITE_OPEN_NOFOLLOW);
  } catch (e) {
    if (e instanceof SQLiteError && e.code?.startsWith("SQLITE_CANTOPEN")) throw unsafeFile();
    throw e;
  }
  try {
    db.run("PRAGMA foreign_keys = ON");
    db.run("PRAGMA busy_timeout = 5000");
    db.run("PRAGMA synchronous = FULL");
    if (opts.migrate) {
      db.run("PRAGMA journal_mode = WAL");
      const from = migrate(db);
      opts.onMigrated?.(from);
    }
    for (const name of DB_FILES) privatize(join(stateDir, name));
    if (opts.migrate) writeMarker(stateDir);
    const st = lstatSync(join(stateDir, DB_FILE));
    return { db, identity: { dev: st.dev, ino: st.ino } };
  } catch (e) {
    db.close();
    throw e;
  }
}
