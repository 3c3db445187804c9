/**
 * Writing a small file of the user's own (a config file, a host's config) so that nobody else can
 * read it at any moment and no reader ever sees half of it: a new 0600 file beside the target,
 * fsynced, then renamed over it. Its directory is created 0700 when missing.
 */
import { closeSync, constants, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { random16Hex } from "../ids.ts";
import { PRIVATE_DIR, PRIVATE_FILE } from "./modes.ts";

export function writePrivateFile(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: PRIVATE_DIR });
  const temp = `${path}.serverfs-${random16Hex()}`;
  const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, PRIVATE_FILE);
  try {
    const bytes = Buffer.from(text, "utf8");
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at);
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    rmSync(temp, { force: true });
    throw e;
  }
  closeSync(fd);
  renameSync(temp, path);
}
