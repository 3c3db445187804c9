/**
 * A walk-pool worker (docs/reliability.md, "Hardening"): runs the walks of find_files and
 * search_text and the listing of large directories off the main thread, one job at a time, so no
 * call can hold up the others or the watch for stdin EOF. Reached through `WalkPool`
 * (src/main/mcp/fs/walk-pool.ts); each job polls its stop flag and closes its handles on the way out.
 */
import { findFiles } from "../main/mcp/fs/find-job.ts";
import { listDirectory } from "../main/mcp/fs/list-job.ts";
import { searchText } from "../main/mcp/fs/search-job.ts";
import { exposeApi } from "../shared/comlink-worker.ts";

export const walkApi = { findFiles, searchText, listDirectory };

export type WalkApi = typeof walkApi;

exposeApi(walkApi);
