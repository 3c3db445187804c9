/**
 * Path confinement (docs/mcp-tools.md#path-confinement to docs/mcp-tools.md#hidden-reserved-and-denied-names): the one policy object every channel uses — list,
 * find, search, read, stat, resource, mutations, binary tools and the Agent start directory.
 */
import { ServerFsError } from "../errors.ts";
import { globMatcher, type Matcher } from "./glob.ts";

const BUILTIN_DENY_NAMES = new Set([".env", ".ssh", ".aws", ".gnupg", ".kube"]);
// `id_*`: every SSH key name, whatever its algorithm (id_ed25519_sk, id_ecdsa_sk, …) or suffix (id_work,
// id_rsa.pub), not only the four default ones (docs/decisions.md)
const BUILTIN_DENY_GLOBS = [".env.*", "*.env", "*.pem", "*.key", "id_*"].map((g) => globMatcher(g, { crossSlash: false }));

export interface PathPolicyOptions {
  allow_hidden: boolean;
  disable_default_deny: boolean;
  extra_deny_globs: string[];
}

export type PathRefusal = "RESERVED_PATH" | "HIDDEN_PATH_NOT_ALLOWED" | "DENIED_PATH";

export const isReservedName = (seg: string) => seg.startsWith(".serverfs-tmp-") || seg === ".serverfs-disabled";
export const isHiddenName = (seg: string) => seg.startsWith(".");

export class PathPolicy {
  private readonly segmentDeny: Matcher[] = [];
  private readonly wholeDeny: Matcher[] = [];

  constructor(readonly options: PathPolicyOptions) {
    for (const glob of options.extra_deny_globs) {
      if (glob.endsWith("/**") && !glob.slice(0, -3).includes("/")) {
        this.segmentDeny.push(globMatcher(glob.slice(0, -3), { crossSlash: false }));
      } else if (!glob.includes("/")) {
        this.segmentDeny.push(globMatcher(glob, { crossSlash: false }));
      } else {
        this.wholeDeny.push(globMatcher(glob, { crossSlash: true }));
      }
    }
  }

  private segmentDenied(seg: string): boolean {
    if (!this.options.disable_default_deny) {
      if (BUILTIN_DENY_NAMES.has(seg) || BUILTIN_DENY_GLOBS.some((m) => m(seg))) return true;
    }
    return this.segmentDeny.some((m) => m(seg));
  }

  /** The first rule (reserved, hidden, denied) that refuses these kept segments, or null. */
  refusal(segments: readonly string[]): PathRefusal | null {
    if (segments.some(isReservedName)) return "RESERVED_PATH";
    if (!this.options.allow_hidden && segments.some(isHiddenName)) return "HIDDEN_PATH_NOT_ALLOWED";
    if (segments.some((s) => this.segmentDenied(s))) return "DENIED_PATH";
    if (this.wholeDeny.length > 0) {
      // Every ancestor is tested too, so a directory a whole-path glob denies hides its subtree
      // on direct access exactly as walks (which prune it) do.
      let prefix = "";
      for (const seg of segments) {
        prefix = prefix === "" ? seg : `${prefix}/${seg}`;
        if (this.wholeDeny.some((m) => m(prefix))) return "DENIED_PATH";
      }
    }
    return null;
  }

  /**
   * Whether one more entry `name` below already-admitted `parent` segments is admitted. Walks use
   * this: every ancestor passed already, so only the new segment and whole-path globs need testing.
   */
  admitsChild(parentPath: string, name: string): boolean {
    if (isReservedName(name)) return false;
    if (!this.options.allow_hidden && isHiddenName(name)) return false;
    if (this.segmentDenied(name)) return false;
    if (this.wholeDeny.length > 0) {
      const whole = parentPath === "" ? name : `${parentPath}/${name}`;
      if (this.wholeDeny.some((m) => m(whole))) return false;
    }
    return true;
  }
}

export interface NormalizedPath {
  /** Kept segments joined with `/`; `""` is the root. */
  path: string;
  segments: string[];
}

const REFUSAL_PHRASE: Record<PathRefusal, string> = {
  RESERVED_PATH: "is a reserved ServerFS name",
  HIDDEN_PATH_NOT_ALLOWED: "is hidden and hidden paths are not allowed",
  DENIED_PATH: "is denied by policy",
};

/**
 * docs/mcp-tools.md#path-confinement steps 1–6 in order; the first failing step decides the code. A rejected path is echoed
 * only in its normalized form, and never when it escapes or holds NUL.
 */
export function confinePath(alias: string, input: string, policy: PathPolicy): NormalizedPath {
  if (input.startsWith("/") || input.startsWith("~")) {
    throw new ServerFsError("PATH_OUTSIDE_WORKDIR", "absolute paths and ~ are not allowed; use a path relative to the workdir");
  }
  const kept: string[] = [];
  for (const seg of input.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") {
      if (kept.length === 0) throw new ServerFsError("PATH_OUTSIDE_WORKDIR", "the path escapes the workdir");
      kept.pop();
    } else kept.push(seg);
  }
  if (input.includes("\0")) throw new ServerFsError("ACCESS_DENIED", "the path contains a NUL character");
  // Like NUL, an unpaired surrogate can be in no UTF-8 filename: the filesystem would silently
  // act on U+FFFD instead, a different name than the one checked and echoed.
  if (!input.isWellFormed()) throw new ServerFsError("ACCESS_DENIED", "the path is not well-formed Unicode");
  const path = kept.join("/");
  const refusal = policy.refusal(kept);
  if (refusal) throw new ServerFsError(refusal, `${alias}:${path} ${REFUSAL_PHRASE[refusal]}`);
  return { path, segments: kept };
}
