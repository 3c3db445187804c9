/**
 * The fields list_directory and stat_file show for every entry (docs/mcp-tools.md): its type, a regular
 * file's size in bytes (null otherwise) and its modification time (null where it could not be read).
 */
import * as v from "valibot";
import { ENTRY_TYPES } from "../../../shared/fs/stat.ts";

export const ENTRY_STAT = {
  type: v.picklist(ENTRY_TYPES),
  size: v.nullable(v.number()),
  modified_at: v.nullable(v.string()),
};
