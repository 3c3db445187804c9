/**
 * The one existing regular file an edit or an overwriting upload replaces (docs/mcp-tools.md#edit_text_file,
 * docs/mcp-tools.md#upload_binary_file), checked in the contract's order: missing, symlink, directory, special file, revision,
 * then more than one hard link (a rename would split the links into two different files).
 */
import { ServerFsError } from "../../../shared/errors.ts";
import { closeQuietly } from "../../../shared/fs/dir-handle.ts";
import { type OpenFile, openExistingFile } from "../../../shared/fs/existing-file.ts";
import { requireRevision } from "./expected-revision.ts";

/** Opens the file to replace; the caller closes `fd`. */
export function openReplaceTarget(dirFd: number, name: string, expectedRevision: string, where: string): OpenFile {
  const file = openExistingFile(dirFd, name, where, "mutation");
  try {
    requireRevision(file.st, expectedRevision, where);
    if (file.st.nlink > 1n) {
      throw new ServerFsError("MULTIPLE_HARDLINKS_NOT_SUPPORTED", `${where} has more than one hard link and cannot be replaced`);
    }
    return file;
  } catch (e) {
    closeQuietly(file.fd);
    throw e;
  }
}
