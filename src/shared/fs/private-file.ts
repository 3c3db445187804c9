/**
 * Writing a small file of the user's own (a config file, a host's config) so that nobody else can
 * read it at any moment and no reader ever sees half of it: an atomic replace (atomic-write.ts) by a
 * 0600 temp file `<name>.serverfs-<hex>` beside the target. Its directory is created 0700 when missing.
 */
import { mkdirSync } from "node:fs";
import { basename, dirname } from "node:path";
import { random16Hex } from "../ids.ts";
import { atomicWrite, withDirectory } from "./atomic-write.ts";
import { PRIVATE_DIR, PRIVATE_FILE } from "./modes.ts";

export function writePrivateFile(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: PRIVATE_DIR });
  const name = basename(path);
  withDirectory(dirname(path), (dirFd) =>
    atomicWrite(dirFd, name, Buffer.from(text, "utf8"), { tempName: `${name}.serverfs-${random16Hex()}`, publish: "replace", mode: PRIVATE_FILE }),
  );
}
