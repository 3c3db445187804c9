import { describe, expect, test } from "bun:test";
import { isServerFsError } from "../../src/shared/errors.ts";
import { confinePath, PathPolicy, type PathPolicyOptions } from "../../src/shared/path/policy.ts";

const policy = (opts: Partial<PathPolicyOptions> = {}) => new PathPolicy({ allow_hidden: false, disable_default_deny: false, extra_deny_globs: [], ...opts });

/** The code confinement refuses `input` with, or the normalized path it accepts. */
function confine(input: string, p = policy()): { code: string; message: string } | { path: string } {
  try {
    return { path: confinePath("repo", input, p).path };
  } catch (e) {
    if (!isServerFsError(e)) throw e;
    return { code: e.code, message: e.message };
  }
}
const codeOf = (input: string, p?: PathPolicy) => {
  const r = confine(input, p);
  return "code" in r ? r.code : null;
};
const pathOf = (input: string, p?: PathPolicy) => {
  const r = confine(input, p);
  if ("code" in r) throw new Error(`refused with ${r.code}`);
  return r.path;
};

describe("path confinement: normalization", () => {
  test("empty and . segments are dropped; the root is the empty path", () => {
    expect(pathOf("")).toBe("");
    expect(pathOf(".")).toBe("");
    expect(pathOf("./a//b/./c/")).toBe("a/b/c");
  });
  test(".. removes the previous kept segment", () => {
    expect(pathOf("a/b/../c")).toBe("a/c");
    expect(pathOf("a/..")).toBe("");
    expect(pathOf("a/./../b")).toBe("b");
  });
  test("a backslash is an ordinary filename character", () => {
    expect(pathOf("a\\b")).toBe("a\\b");
    expect(pathOf("a\\..\\b")).toBe("a\\..\\b");
  });
  test("no Unicode normalization or case folding is applied", () => {
    expect(pathOf("Cafe\u0301/ß")).toBe("Cafe\u0301/ß");
  });
});

describe("path confinement: refusals, in step order", () => {
  test("step 1: a leading / or ~ is PATH_OUTSIDE_WORKDIR", () => {
    expect(codeOf("/etc/passwd")).toBe("PATH_OUTSIDE_WORKDIR");
    expect(codeOf("~")).toBe("PATH_OUTSIDE_WORKDIR");
    expect(codeOf("~/x")).toBe("PATH_OUTSIDE_WORKDIR");
  });
  test("step 2: .. with nothing to remove is PATH_OUTSIDE_WORKDIR, even when a later segment would come back", () => {
    expect(codeOf("..")).toBe("PATH_OUTSIDE_WORKDIR");
    expect(codeOf("a/../../a")).toBe("PATH_OUTSIDE_WORKDIR");
    expect(codeOf("./..")).toBe("PATH_OUTSIDE_WORKDIR");
  });
  test("a rejected absolute or escaping path is never echoed", () => {
    const abs = confine("/srv/secret-root/x");
    const esc = confine("../secret-sibling");
    expect("message" in abs && abs.message).not.toContain("secret-root");
    expect("message" in esc && esc.message).not.toContain("secret-sibling");
  });
  test("step 3: NUL is ACCESS_DENIED, after the escape check", () => {
    expect(codeOf("a\0b")).toBe("ACCESS_DENIED");
    expect(codeOf(".env\0")).toBe("ACCESS_DENIED");
    expect(codeOf("../\0")).toBe("PATH_OUTSIDE_WORKDIR");
    expect(codeOf("/\0")).toBe("PATH_OUTSIDE_WORKDIR");
  });
  test("step 4: reserved names are RESERVED_PATH, before hidden and deny", () => {
    expect(codeOf(".serverfs-tmp-0123456789abcdef")).toBe("RESERVED_PATH");
    expect(codeOf("a/.serverfs-disabled/b")).toBe("RESERVED_PATH");
    expect(codeOf(".env/.serverfs-tmp-x")).toBe("RESERVED_PATH");
    expect(codeOf(".serverfs-tmp-x", policy({ allow_hidden: true, disable_default_deny: true }))).toBe("RESERVED_PATH");
  });
  test("step 5: a segment starting with . is HIDDEN_PATH_NOT_ALLOWED unless allow_hidden", () => {
    expect(codeOf(".git/config")).toBe("HIDDEN_PATH_NOT_ALLOWED");
    expect(codeOf("a/.cache")).toBe("HIDDEN_PATH_NOT_ALLOWED");
    expect(codeOf(".env")).toBe("HIDDEN_PATH_NOT_ALLOWED");
    expect(pathOf(".git/config", policy({ allow_hidden: true }))).toBe(".git/config");
  });
  test("a .. that removes a hidden segment leaves nothing to refuse", () => {
    expect(pathOf(".hidden/../a")).toBe("a");
  });
  test("the message carries the normalized path only", () => {
    const r = confine("./x//.secret/../.hidden");
    expect(r).toEqual({ code: "HIDDEN_PATH_NOT_ALLOWED", message: "repo:x/.hidden is hidden and hidden paths are not allowed" });
  });
});

describe("built-in deny set", () => {
  const open = policy({ allow_hidden: true });
  test("denied names and patterns in any segment are DENIED_PATH", () => {
    for (const p of [".env", "a/.env", "id_rsa", "x/id_ed25519", ".ssh/known_hosts", ".aws/credentials", ".gnupg", ".kube/config"]) {
      expect(codeOf(p, open)).toBe("DENIED_PATH");
    }
    for (const p of [".env.local", "prod.env", "cert.pem", "tls/server.key", "a.pem/b", "id_ed25519_sk", "x/id_ecdsa_sk", "id_rsa.pub", "id_work"]) {
      expect(codeOf(p, open)).toBe("DENIED_PATH");
    }
  });
  test("near misses are not denied", () => {
    for (const p of ["env", "my_id_rsa", "id-rsa", "ID_RSA", "x.pem.txt", "keys", "ssh", "my.envrc"]) expect(codeOf(p, open)).toBeNull();
  });
  test("disable_default_deny releases the built-in set", () => {
    const released = policy({ allow_hidden: true, disable_default_deny: true });
    expect(codeOf(".env", released)).toBeNull();
    expect(codeOf("id_rsa", released)).toBeNull();
    expect(codeOf("cert.pem", released)).toBeNull();
  });
});

describe("extra_deny_globs", () => {
  test("NAME/** denies every path having a segment matching NAME", () => {
    const p = policy({ extra_deny_globs: ["secrets/**"] });
    expect(codeOf("secrets", p)).toBe("DENIED_PATH");
    expect(codeOf("a/secrets/b.txt", p)).toBe("DENIED_PATH");
    expect(codeOf("secretsx/b", p)).toBeNull();
  });
  test("a glob without / is matched against every segment", () => {
    const p = policy({ extra_deny_globs: ["*.sqlite"] });
    expect(codeOf("db.sqlite", p)).toBe("DENIED_PATH");
    expect(codeOf("x/db.sqlite/y", p)).toBe("DENIED_PATH");
    expect(codeOf("db.sqlite3", p)).toBeNull();
  });
  test("any other glob is matched against the whole path, where * crosses /", () => {
    const p = policy({ extra_deny_globs: ["build/*.log"] });
    expect(codeOf("build/a.log", p)).toBe("DENIED_PATH");
    expect(codeOf("build/x/a.log", p)).toBe("DENIED_PATH");
    expect(codeOf("src/build/a.log", p)).toBeNull();
  });
  test("a directory a whole-path glob denies hides its subtree", () => {
    const p = policy({ extra_deny_globs: ["config/private"] });
    expect(codeOf("config/private", p)).toBe("DENIED_PATH");
    expect(codeOf("config/private/key.txt", p)).toBe("DENIED_PATH");
    expect(codeOf("config/public", p)).toBeNull();
  });
  test("extra globs still apply when the built-in set is disabled", () => {
    const p = policy({ disable_default_deny: true, extra_deny_globs: ["*.pem"] });
    expect(codeOf("cert.pem", p)).toBe("DENIED_PATH");
  });
});

describe("walk pruning: admitsChild agrees with confinement", () => {
  const cases: [PathPolicy, string, string][] = [
    [policy(), "", ".git"],
    [policy(), "src", "main.ts"],
    [policy({ allow_hidden: true }), "", ".git"],
    [policy({ allow_hidden: true }), "a", ".serverfs-tmp-1"],
    [policy({ allow_hidden: true }), "", ".env"],
    [policy({ extra_deny_globs: ["config/private"] }), "config", "private"],
    [policy({ extra_deny_globs: ["vendor/**"] }), "x", "vendor"],
  ];
  test("a child is admitted exactly when its full path confines", () => {
    for (const [p, parent, name] of cases) {
      const full = parent === "" ? name : `${parent}/${name}`;
      expect([full, p.admitsChild(parent, name)]).toEqual([full, codeOf(full, p) === null]);
    }
  });
});
