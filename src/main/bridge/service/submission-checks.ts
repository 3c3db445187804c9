/**
 * The pure steps of a submission (docs/bridge-rpc.md#tasksubmit steps 2, 4, 5, 6 and 9): value checks that need no
 * state, the request fingerprint, and the start directory's path policy with the Bridge's codes.
 */

import { byteSize } from "../../../shared/byte-size.ts";
import { canonicalJson, sha256Hex } from "../../../shared/canonical-json.ts";
import { modeRank } from "../../../shared/config/load.ts";
import type { Profile } from "../../../shared/config/schema.ts";
import { ServerFsError } from "../../../shared/errors.ts";
import { closeQuietly, openDirPath } from "../../../shared/fs/dir-handle.ts";
import { type DirIdentity, identityOfFd, type VerifiedStartDir } from "../../../shared/fs/start-directory.ts";
import { LIMITS } from "../../../shared/limits.ts";
import { byteLength } from "../../../shared/utf8.ts";
import type { Workspace } from "../../../shared/workspace.ts";

export function checkPrompt(prompt: string): void {
  if (prompt === "") throw new ServerFsError("INVALID_REQUEST", "prompt must not be empty");
  if (byteLength(prompt) > LIMITS.max_prompt_bytes) {
    throw new ServerFsError("AGENT_PROMPT_TOO_LARGE", `the prompt is larger than ${byteSize(LIMITS.max_prompt_bytes)}`);
  }
}

/** Step 5: no NUL, not absolute, no `..`; `""` and `"."` both mean the root. */
export function normalizeStartPath(path: string): string {
  if (path.includes("\0") || path.startsWith("/") || path.split("/").includes("..")) {
    throw new ServerFsError("INVALID_WORKDIR_PATH", "the start directory must be a relative path inside the workdir");
  }
  return path
    .split("/")
    .filter((s) => s !== "" && s !== ".")
    .join("/");
}

export interface FingerprintInput {
  continue_from_task_id: string | null;
  path: string;
  profile: string;
  prompt: string;
  runtime: string;
  workdir: string;
  model: string | null;
  effort: string | null;
  max_budget_usd: number | null;
}

/**
 * Step 6: never includes correlation_id (it is never used for idempotency). A choice (model, effort,
 * budget) counts only when asked, so a request without one keeps the fingerprint it had before choices
 * existed. The budget is hashed as its decimal text: canonical JSON holds integers only.
 */
export function requestFingerprint(f: FingerprintInput): string {
  return sha256Hex(
    canonicalJson({
      continue_from_task_id: f.continue_from_task_id,
      path: f.path,
      profile: f.profile,
      prompt_sha256: sha256Hex(f.prompt),
      runtime: f.runtime,
      workdir: f.workdir,
      ...(f.model !== null ? { model: f.model } : {}),
      ...(f.effort !== null ? { effort: f.effort } : {}),
      ...(f.max_budget_usd !== null ? { max_budget_usd: String(f.max_budget_usd) } : {}),
    }),
  );
}

/** Step 9, policy authorization (alias already resolved). */
export function authorize(ws: Workspace, runtime: string, profile: Profile): void {
  const p = ws.policy;
  if (p.agent_mode === "disabled") throw new ServerFsError("AGENT_DISABLED", "agent tasks are disabled for this workdir");
  if (!(p.agent_runtimes as string[]).includes(runtime)) {
    throw new ServerFsError("AGENT_RUNTIME_NOT_ALLOWED", "this runtime is not allowed for this workdir");
  }
  if (modeRank(profile) > modeRank(p.agent_mode) || (profile === "review" && runtime === "claude")) {
    throw new ServerFsError("AGENT_PROFILE_NOT_ALLOWED", "this profile is not allowed for this workdir and runtime");
  }
}

const START_DIR_CODES: Record<string, ServerFsError["code"]> = {
  PATH_NOT_FOUND: "WORKDIR_PATH_NOT_FOUND",
  PARENT_NOT_FOUND: "WORKDIR_PATH_NOT_FOUND",
  NOT_A_DIRECTORY: "INVALID_WORKDIR_PATH",
  PATH_OUTSIDE_WORKDIR: "INVALID_WORKDIR_PATH",
  ACCESS_DENIED: "INVALID_WORKDIR_PATH",
};

/** The start directory as verified at submit: its host path, and its walk and identity for the spawn. */
export interface StartDirectory {
  path: string;
  verified: VerifiedStartDir;
}

/**
 * Step 9, the start directory: the MCP side's path policy (reserved, hidden, deny, no symlink in
 * any segment) and a real traversal; returns the host directory the provider runs in and the
 * identity the provider's working directory must have once spawned.
 */
export function resolveStartDirectory(ws: Workspace, relative: string): StartDirectory {
  try {
    const { segments } = ws.confine(relative);
    const fd = openDirPath(ws.realRoot, segments, { where: ws.where(relative), side: "read" });
    let identity: DirIdentity;
    try {
      identity = identityOfFd(fd);
    } finally {
      closeQuietly(fd);
    }
    return {
      path: segments.length === 0 ? ws.realRoot : `${ws.realRoot}/${segments.join("/")}`,
      verified: { root: ws.realRoot, segments: [...segments], identity },
    };
  } catch (e) {
    if (e instanceof ServerFsError && START_DIR_CODES[e.code]) {
      const code = START_DIR_CODES[e.code]!;
      throw new ServerFsError(code, code === "WORKDIR_PATH_NOT_FOUND" ? "the start directory does not exist" : "the start directory is not a directory");
    }
    throw e;
  }
}
