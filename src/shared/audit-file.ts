/**
 * The audit file (`[audit] file`, docs/configuration.md; docs/mcp-tools.md#audit-log): the same JSON
 * lines as stderr, also appended to a file of the operator's that outlives the host's own log.
 *
 * Opened safely: its directory (created 0700 when missing) must be a directory of this user (or root) that group and others cannot
 * write (else anyone could swap the file under it); the file is opened `O_APPEND | O_CREAT | O_NOFOLLOW
 * | O_NONBLOCK` with mode 0600 (a symbolic link fails, a FIFO without a reader cannot block the open)
 * and must be a regular file of this user, no group or other bit, one link.
 *
 * Several processes append to one file (every `serverfs mcp` of every host, the Bridge and its worker
 * threads). Each line is one write() on an O_APPEND descriptor, which Linux places at the end of a local
 * file atomically, so lines never interleave. Every write holds an exclusive flock of `<file>.lock`
 * (a few microseconds: an audit line is per call, not per byte) while it checks where the path points,
 * rotates when the line would take the file past `max_bytes` (`file` → `file.1` … `file.keep`, the
 * oldest dropped) and appends: so no line goes into a file another process is renaming, and the bound
 * holds across processes. A writer whose open file is no longer the one at the path (another process
 * rotated, or someone removed it) reopens the path first.
 */
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, renameSync, type Stats, statSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { AuditLog, type AuditSink, type LogLevelSetting, stderrSink } from "./audit.ts";
import { type AuditFileSettings, ConfigError } from "./config/load.ts";
import { flock, LOCK_EX, LOCK_UN } from "./ffi/libc.ts";
import { O_CLOEXEC } from "./fs/dir-handle.ts";
import { isOwnerOnly, octal, othersMayWrite, ownUid, PRIVATE_DIR, PRIVATE_FILE } from "./fs/modes.ts";
import { errnoReason, osCode } from "./fs/os-errors.ts";

const FILE_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK | O_CLOEXEC;
const LOCK_FLAGS = constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK | O_CLOEXEC;

const refuse = (phrase: string) => new ConfigError(`audit.file: ${phrase}`);

function checkDirectory(dir: string): void {
  let st: Stats;
  try {
    // like every directory ServerFS keeps for its user: created private when missing
    mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR });
    st = statSync(dir);
  } catch (e) {
    throw refuse(`the directory ${dir} cannot be used (${errnoReason(e)})`);
  }
  if (!st.isDirectory()) throw refuse(`${dir} is not a directory`);
  if (st.uid !== ownUid() && st.uid !== 0)
    throw refuse(`the directory ${dir} belongs to uid ${st.uid}, not to this user (uid ${ownUid()}); choose a directory of yours`);
  if (othersMayWrite(st.mode)) {
    throw refuse(`the directory ${dir} has mode ${octal(st.mode)}, so group or others could replace the file; choose a directory only you can write`);
  }
}

/** Opens `path` with `flags` and checks it is a private regular file of this user; never follows a link. */
function openPrivate(path: string, flags: number): number {
  let fd: number;
  try {
    fd = openSync(path, flags, PRIVATE_FILE);
  } catch (e) {
    if (osCode(e) === "ELOOP") throw refuse(`${path} is a symbolic link; the audit file must be a regular file`);
    throw refuse(`${path} cannot be opened (${errnoReason(e)})`);
  }
  const st = fstatSync(fd);
  const problem = !st.isFile()
    ? "is not a regular file"
    : st.uid !== ownUid()
      ? `belongs to uid ${st.uid}, not to this user (uid ${ownUid()})`
      : !isOwnerOnly(st.mode)
        ? `has mode ${octal(st.mode)}, so group or others can reach it; it must be 0600 (chmod 600 it)`
        : st.nlink > 1
          ? "has other hard links"
          : null;
  if (problem === null) return fd;
  closeSync(fd);
  throw refuse(`${path} ${problem}`);
}

const exists = (path: string): Stats | null => {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
};

export class AuditFile implements AuditSink {
  /** null after a reopen failed: a closed descriptor's number may be reused by any other file. */
  private fd: number | null;
  private readonly lockFd: number;
  /** Set after a failed write, so a failing disk is reported once, not once per line. */
  private failing = false;

  private constructor(private readonly settings: AuditFileSettings) {
    checkDirectory(dirname(settings.path));
    this.lockFd = openPrivate(`${settings.path}.lock`, LOCK_FLAGS);
    this.fd = openPrivate(settings.path, FILE_FLAGS);
  }

  private static readonly open = new Map<string, AuditFile>();

  /** One file per path per thread: every AuditLog of this thread shares its descriptor. */
  static shared(settings: AuditFileSettings): AuditFile {
    let file = AuditFile.open.get(settings.path);
    if (file === undefined) {
      file = new AuditFile(settings);
      AuditFile.open.set(settings.path, file);
    }
    return file;
  }

  write(line: string): void {
    const bytes = Buffer.from(line, "utf8");
    try {
      this.underLock(() => this.append(bytes));
      this.failing = false;
    } catch (e) {
      if (this.failing) return;
      this.failing = true;
      // on stderr only, where the line itself went too; the errno code, never a path
      stderrSink.write(
        `${JSON.stringify({ timestamp: new Date().toISOString(), level: "ERROR", event: "audit_file_failed", error_code: osCode(e) ?? "unknown" })}\n`,
      );
    }
  }

  private underLock(run: () => void): void {
    const locked = flock(this.lockFd, LOCK_EX);
    if (!locked.ok) throw Object.assign(new Error("flock failed"), { code: `errno ${locked.errno}` });
    try {
      run();
    } finally {
      flock(this.lockFd, LOCK_UN);
    }
  }

  /** Appends the line, rotating first when it would take a non-empty file past `max_bytes`. */
  private append(bytes: Buffer): void {
    let fd = this.current();
    const size = fstatSync(fd).size;
    if (size > 0 && size + bytes.length > this.settings.max_bytes) fd = this.rotate();
    const written = writeSync(fd, bytes);
    if (written !== bytes.length) throw Object.assign(new Error("short write"), { code: "ENOSPC" });
  }

  /** The descriptor of the file now at the path: another process may have rotated it, or someone removed it. */
  private current(): number {
    if (this.fd !== null) {
      const atPath = exists(this.settings.path);
      const mine = fstatSync(this.fd);
      if (atPath !== null && atPath.ino === mine.ino && atPath.dev === mine.dev) return this.fd;
    }
    return this.reopen();
  }

  private reopen(): number {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    this.fd = openPrivate(this.settings.path, FILE_FLAGS);
    return this.fd;
  }

  private rotate(): number {
    const { path, keep } = this.settings;
    for (let i = keep - 1; i >= 1; i--) if (exists(`${path}.${i}`) !== null) renameSync(`${path}.${i}`, `${path}.${i + 1}`);
    renameSync(path, `${path}.1`);
    return this.reopen();
  }
}

/** The audit log of a process or thread: stderr, and the audit file when `[audit] file` is set. */
export function openAuditLog(level: LogLevelSetting, file: AuditFileSettings | null): AuditLog {
  if (file === null) return new AuditLog(level);
  const copy = AuditFile.shared(file);
  return new AuditLog(level, {
    write(line) {
      stderrSink.write(line);
      copy.write(line);
    },
  });
}
