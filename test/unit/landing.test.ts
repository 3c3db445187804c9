import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { landingOf, type WorkdirAnchor } from "../../src/shared/fs/landing.ts";
import { tempDir } from "../helpers/workspace.ts";

// <base>/ws is the workdir (also configured as <base>/alias, a link to it), <base>/outside beside it
const base = tempDir("sfs-landing-");
afterAll(() => base.remove());
const ws = base.dir("ws");
const outside = base.dir("outside");
writeFileSync(join(outside, "x.txt"), "x\n");
symlinkSync(ws, join(base.path, "alias"));
mkdirSync(join(ws, "sub", "deep"), { recursive: true });
writeFileSync(join(ws, "sub", "y.txt"), "y\n");
symlinkSync(outside, join(ws, "link"));
symlinkSync("sub", join(ws, "inlink"));
symlinkSync(join(ws, "sub"), join(ws, "abs-inlink"));
symlinkSync("../outside/x.txt", join(ws, "leaf.txt"));
symlinkSync("../../..", join(ws, "sub", "deep", "up"));
symlinkSync("..", join(ws, "sub", "parent"));
symlinkSync("loop-b", join(ws, "loop-a"));
symlinkSync("loop-a", join(ws, "loop-b"));

const anchor: WorkdirAnchor = { realRoot: ws, roots: [join(base.path, "alias")], start: ["sub"] };
const land = (path: string): string | null => landingOf(anchor, path)?.join("/") ?? null;

describe("landingOf: where a path an agent names lands (docs/agent-requests.md)", () => {
  test("relative paths start at the start directory; `..` is lexical in the spelling", () => {
    expect(land("y.txt")).toBe("sub/y.txt");
    expect(land("../README.md")).toBe("README.md");
    expect(land(".")).toBe("sub");
    expect(land("../..")).toBeNull();
    expect(land("../../outside/x.txt")).toBeNull();
  });

  test("absolute paths under either spelling of the root land inside; any other is outside", () => {
    expect(land(join(ws, "sub/y.txt"))).toBe("sub/y.txt");
    expect(land(join(base.path, "alias", "a/b.txt"))).toBe("a/b.txt");
    expect(land(ws)).toBe("");
    expect(land(join(outside, "x.txt"))).toBeNull();
    expect(land(`${ws}2/x`)).toBeNull();
    expect(land(join(ws, "..", "outside"))).toBeNull();
  });

  test("links are followed, the last name included, and a link's `..` climbs from where it really is", () => {
    expect(land(join(ws, "link/x.txt"))).toBeNull();
    expect(land(join(ws, "link/new/deeper.txt"))).toBeNull();
    expect(land(join(ws, "leaf.txt"))).toBeNull();
    expect(land(join(ws, "inlink/new.txt"))).toBe("sub/new.txt");
    expect(land(join(ws, "abs-inlink/y.txt"))).toBe("sub/y.txt");
    expect(land(join(ws, "sub/parent/README.md"))).toBe("README.md");
    expect(land(join(ws, "sub/deep/up/x"))).toBeNull();
  });

  test("names that do not exist yet are taken as spelled below their existing parent", () => {
    expect(land(join(ws, "new/dir/file.txt"))).toBe("new/dir/file.txt");
    expect(land("file:///etc/passwd")).toBe("sub/file:/etc/passwd");
  });

  test("what cannot be resolved safely is null: `~`, NUL, a link loop, an empty path", () => {
    expect(land("~/.ssh/id_rsa")).toBeNull();
    expect(land("~")).toBeNull();
    expect(land("a\0b")).toBeNull();
    expect(land(join(ws, "loop-a/x"))).toBeNull();
    expect(land("")).toBeNull();
  });
});
