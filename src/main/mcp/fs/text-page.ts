/**
 * Reading one page of a text file (docs/mcp-tools.md#read_text_file), shared by read_text_file and the resource
 * read (docs/mcp-tools.md#the-file-resource). The target's type is decided from a no-follow stat before anything is opened; the
 * file is then read through one non-blocking, no-follow handle, stat-ed before and after.
 *
 * Reads are bounded before they scan (docs/reliability.md, "Hardening"): the first bytes are
 * checked for NUL before any line seek, a seek reads at most `max_scan_bytes` (past it:
 * SCAN_LIMIT_EXCEEDED), and the seek's reads are asynchronous, so a seek through a huge file neither
 * blocks the event loop nor outlives stdin EOF (it stops between chunks once the call is abandoned).
 * The page itself (its head, then at most `max_read_bytes + 1` bytes) is read synchronously when it is
 * at most SYNC_READ_BYTES: a copy of that size takes well under a millisecond, where each round trip
 * through the thread pool cost tens of microseconds and made a small read twice as slow.
 */
import { type BigIntStats, fstatSync, openSync, read, readSync } from "node:fs";
import { type ErrorCode, ServerFsError } from "../../../shared/errors.ts";
import { at, closeQuietly, lstatAt, READ_FLAGS, withParent } from "../../../shared/fs/dir-handle.ts";
import { osCode, osError } from "../../../shared/fs/os-errors.ts";
import { type EntryType, entryType, revisionOf } from "../../../shared/fs/stat.ts";
import type { NormalizedPath } from "../../../shared/path/policy.ts";
import { decodeStrict, hasBom } from "../../../shared/utf8.ts";
import type { Workspace } from "../../../shared/workspace.ts";
import { Abandoned } from "../wait-queue.ts";

export interface PageRequest {
  startLine: number;
  /** Already capped at the workdir's `max_read_lines`. */
  maxLines: number;
  /** The workdir's `max_read_bytes`. */
  maxBytes: number;
  /** Resource reads: the whole file in this one page, else RESOURCE_TOO_LARGE. */
  whole: boolean;
  /** `[limits] max_scan_bytes`: how far into the file a line seek may read. */
  maxScanBytes: number;
  /** Aborted when the process is going away: the seek stops between chunks. */
  signal: AbortSignal;
}

export interface TextPage {
  start_line: number;
  end_line: number;
  content: string;
  bytes_returned: number;
  has_more: boolean;
  next_start_line: number | null;
  revision: string;
}

const HEAD_BYTES = 1024;
/** Reads up to this size are one synchronous copy; larger ones go through the thread pool. */
const SYNC_READ_BYTES = 1 << 20;
/** Small enough that counting the newlines of one chunk never holds the event loop for long. */
const SEEK_CHUNK = 1 << 18;
const NL = 0x0a;

const REFUSED_TYPES: Partial<Record<EntryType, [ErrorCode, string]>> = {
  directory: ["NOT_A_FILE", "is not a file"],
  symlink: ["SYMLINK_NOT_ALLOWED", "is a symlink, which is not followed"],
  other: ["UNSUPPORTED_FILE_TYPE", "is a FIFO, socket or device"],
};

function requireFile(st: BigIntStats, where: string): void {
  const refused = REFUSED_TYPES[entryType(st)];
  if (refused) throw new ServerFsError(refused[0], `${where} ${refused[1]}`);
}

type ReadInto = (fd: number, buf: Buffer, offset: number, length: number, position: number) => number | Promise<number>;

const readAsync: ReadInto = (fd, buf, offset, length, position) =>
  new Promise((resolve, reject) => read(fd, buf, offset, length, position, (e, n) => (e ? reject(e) : resolve(n))));

/** Reads up to `length` bytes at `position` into `buf` (or a new buffer), fewer only at end of file. */
async function readAt(fd: number, length: number, position: number, buf = Buffer.allocUnsafe(length), readInto: ReadInto = readAsync): Promise<Buffer> {
  let n = 0;
  while (n < length) {
    const got = await readInto(fd, buf, n, length - n, position + n);
    if (got === 0) break;
    n += got;
  }
  return buf.subarray(0, n);
}

/**
 * A read of the page: up to `length` bytes at `position`, never past `size` (the file's size when the
 * read began; a file that changes meanwhile fails the revision check after), so a small file is one
 * read with no second one to find its end; synchronous up to SYNC_READ_BYTES.
 */
function readPart(fd: number, length: number, position: number, size: number): Promise<Buffer> {
  const want = Math.max(0, Math.min(length, size - position));
  return readAt(fd, want, position, Buffer.allocUnsafe(want), want > SYNC_READ_BYTES ? readAsync : readSync);
}

/**
 * The byte offset where line `line` starts, counting from line 1 at `offset`: null past the end of
 * the file, "limit" when it is not found in the file's first `maxScan` bytes and the file goes on.
 */
async function seekLine(fd: number, offset: number, line: number, maxScan: number, signal: AbortSignal): Promise<number | null | "limit"> {
  let remaining = line - 1;
  let position = offset;
  const scratch = remaining > 0 ? Buffer.allocUnsafe(SEEK_CHUNK) : null;
  while (remaining > 0) {
    if (signal.aborted) throw new Abandoned("the call was abandoned");
    if (position >= maxScan) return (await readAt(fd, 1, position)).length === 0 ? null : "limit";
    const chunk = await readAt(fd, Math.min(SEEK_CHUNK, maxScan - position), position, scratch!);
    if (chunk.length === 0) return null;
    for (let i = chunk.indexOf(NL); i !== -1; i = chunk.indexOf(NL, i + 1)) {
      if (--remaining === 0) return position + i + 1;
    }
    position += chunk.length;
  }
  return position;
}

/** The whole lines at the start of `window` that fit both budgets; `window` holds one byte more than the byte budget allows. */
function fitLines(window: Buffer, maxLines: number, maxBytes: number): { end: number; lines: number } {
  let end = 0;
  let lines = 0;
  while (lines < maxLines && end < window.length) {
    const nl = window.indexOf(NL, end);
    const lineEnd = nl === -1 ? window.length : nl + 1;
    if (lineEnd > maxBytes) break;
    end = lineEnd;
    lines++;
  }
  return { end, lines };
}

async function readOpenFile(fd: number, where: string, req: PageRequest): Promise<TextPage> {
  const before = fstatSync(fd, { bigint: true });
  requireFile(before, where);
  const changed = () => revisionOf(before) !== revisionOf(fstatSync(fd, { bigint: true }));
  const changedError = () => new ServerFsError("FILE_CHANGED_DURING_READ", `${where} changed while it was read`);
  const size = Number(before.size);
  const head = await readPart(fd, HEAD_BYTES, 0, size);
  // The first bytes decide BINARY_FILE before any seek: a huge binary file is never scanned.
  if (head.includes(0)) throw changed() ? changedError() : new ServerFsError("BINARY_FILE", `${where} is a binary file`);
  const bodyStart = hasBom(head) ? 3 : 0;
  const lineOffset = await seekLine(fd, bodyStart, req.startLine, req.maxScanBytes, req.signal);
  if (lineOffset === "limit") {
    if (changed()) throw changedError();
    throw new ServerFsError("SCAN_LIMIT_EXCEEDED", `${where}: reaching line ${req.startLine} would read past max_scan_bytes`);
  }
  // One byte past the budget tells a line that does not fit from one that ends exactly at it.
  const window = lineOffset === null ? Buffer.alloc(0) : await readPart(fd, req.maxBytes + 1, lineOffset, size);
  const { end, lines } = fitLines(window, req.maxLines, req.maxBytes);
  const after = fstatSync(fd, { bigint: true });

  const tooLarge = lines === 0 && window.length > 0;
  const slice = tooLarge ? window : window.subarray(0, end);
  const hasMore = end < window.length;
  if (revisionOf(before) !== revisionOf(after)) throw changedError();
  if (slice.includes(0)) throw new ServerFsError("BINARY_FILE", `${where} is a binary file`);
  if (req.whole && (tooLarge || hasMore)) throw new ServerFsError("RESOURCE_TOO_LARGE", `${where} does not fit in one page; use read_text_file`);
  if (tooLarge) throw new ServerFsError("LINE_TOO_LARGE", `${where} has a line longer than max_read_bytes`);
  const content = decodeStrict(slice);
  if (content === null) throw new ServerFsError("UNSUPPORTED_TEXT_ENCODING", `${where} is not valid UTF-8`);

  const endLine = req.startLine + lines - 1;
  return {
    start_line: req.startLine,
    end_line: endLine,
    content,
    bytes_returned: end,
    has_more: hasMore,
    next_start_line: hasMore ? endLine + 1 : null,
    revision: revisionOf(before),
  };
}

export async function readTextPage(ws: Workspace, target: NormalizedPath, req: PageRequest): Promise<TextPage> {
  const where = ws.where(target.path);
  if (target.segments.length === 0) throw new ServerFsError("NOT_A_FILE", `${where} is not a file`);
  const fd = withParent(ws.realRoot, target.segments, { where, side: "read" }, (dirFd, name) => {
    try {
      requireFile(lstatAt(dirFd, name), where);
      return openSync(at(dirFd, name), READ_FLAGS);
    } catch (e) {
      throw osError(e, "read", where);
    }
  });
  try {
    return await readOpenFile(fd, where, req);
  } catch (e) {
    throw osCode(e) === undefined ? e : osError(e, "read", where);
  } finally {
    closeQuietly(fd);
  }
}
