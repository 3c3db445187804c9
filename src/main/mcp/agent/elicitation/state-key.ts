/**
 * The key that signs a multi-round-trip `requestState` (docs/elicitation.md#protocol-revisions): 32
 * random bytes in `<[bridge] state_dir>/mcp-request-state.key`, shared by every `serverfs mcp` of the
 * user, so that one process verifies the state another issued, also after a restart. It is created
 * whole or not at all (a 0600 temp file published by a hard link, which never replaces anything), so
 * two processes that create it at once end up with one key: the loser of the link reads the winner's.
 * A key file that is not a regular file of this user, is readable by group or others, or is not 32
 * bytes is refused, never replaced: whoever could read or choose it could forge approvals.
 */
import { randomBytes } from "node:crypto";
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { join } from "node:path";
import { expandHome } from "../../../../shared/config/load.ts";
import { atomicWrite, withDirectory } from "../../../../shared/fs/atomic-write.ts";
import { O_CLOEXEC } from "../../../../shared/fs/dir-handle.ts";
import { isOwnerOnly, octal, ownUid, PRIVATE_FILE } from "../../../../shared/fs/modes.ts";
import { osCode } from "../../../../shared/fs/os-errors.ts";
import { random16Hex } from "../../../../shared/ids.ts";

export const STATE_KEY_FILE = "mcp-request-state.key";
const KEY_BYTES = 32;
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY | O_CLOEXEC;

/** Why the key cannot be had; its message names no path. */
export class StateKeyUnavailable extends Error {
  override readonly name = "StateKeyUnavailable";
}

/** The key in the file at `path`, or null when there is none yet. */
function readKey(path: string): Uint8Array | null {
  let fd: number;
  try {
    fd = openSync(path, READ_FLAGS);
  } catch (e) {
    if (osCode(e) === "ENOENT") return null;
    throw new StateKeyUnavailable(osCode(e) === "ELOOP" ? "the key file is a symbolic link" : `the key file cannot be opened (${osCode(e) ?? "error"})`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new StateKeyUnavailable("the key file is not a regular file");
    if (st.uid !== ownUid()) throw new StateKeyUnavailable(`the key file is owned by uid ${st.uid}, not by this user`);
    if (!isOwnerOnly(st.mode)) throw new StateKeyUnavailable(`the key file has mode ${octal(st.mode)}; it must be ${octal(PRIVATE_FILE)}`);
    const key = new Uint8Array(KEY_BYTES + 1);
    const read = readSync(fd, key, 0, key.length, 0);
    if (read !== KEY_BYTES) throw new StateKeyUnavailable(`the key file holds ${read === KEY_BYTES + 1 ? "more" : read} bytes, not ${KEY_BYTES}`);
    return key.subarray(0, KEY_BYTES);
  } finally {
    closeSync(fd);
  }
}

/** Reads the key in `stateDir`, creating it when there is none; throws StateKeyUnavailable. */
export function loadStateKey(stateDir: string): Uint8Array {
  const dir = expandHome(stateDir);
  const path = join(dir, STATE_KEY_FILE);
  const existing = readKey(path);
  if (existing) return existing;
  try {
    withDirectory(dir, (dirFd) =>
      atomicWrite(dirFd, STATE_KEY_FILE, randomBytes(KEY_BYTES), {
        tempName: `${STATE_KEY_FILE}.serverfs-${random16Hex()}`,
        publish: "create",
        mode: PRIVATE_FILE,
      }),
    );
  } catch (e) {
    // another process published its key first: that one is the key
    if (osCode(e) !== "EEXIST") throw new StateKeyUnavailable(`the key file cannot be created in the Bridge's state directory (${osCode(e) ?? "error"})`);
  }
  const created = readKey(path);
  if (!created) throw new StateKeyUnavailable("the key file vanished after it was created");
  return created;
}
