/**
 * A walk-pool worker (docs/reliability.md, "Hardening"): runs the parts of the walks of find_files
 * and search_text (`walk/walk-part.ts`) and the listing of large directories off the main thread, one job
 * at a time, so no call can hold up the others or the watch for stdin EOF. Reached through
 * `WalkPool` (src/main/mcp/fs/walk-pool.ts); each job polls its stop flag and closes its handles on
 * the way out.
 */
import { exposeApi } from "../shared/comlink-worker.ts";
import { findPart } from "./walk/find-job.ts";
import { runListJob } from "./walk/list-job.ts";
import { searchPart } from "./walk/search-job.ts";

export const walkApi = { findPart, searchPart, runListJob };

export type WalkApi = typeof walkApi;

exposeApi(walkApi);
