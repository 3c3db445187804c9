/**
 * `npm run install-local` (deploy/install.sh) for a user whose PATH lacks ~/.local/bin: it prints the
 * exact line for their shell, and that line, run as printed, makes a new shell find `serverfs`.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { dirname, join } from "node:path";
import { REPO_ROOT, tempDir } from "../helpers/workspace.ts";

const home = tempDir("sfs-install-");
afterAll(() => home.remove());

// what a fresh login has: no ~/.local/bin; Bun and npm from where they are installed here
const PATH = [dirname(process.execPath), dirname(Bun.which("npm") ?? "/usr/bin/npm"), "/usr/bin", "/bin"].join(":");

describe("install-local when ~/.local/bin is not on PATH", () => {
  test("prints the line for the user's shell; run as printed, a new bash finds serverfs", async () => {
    const env = { HOME: home.path, PATH, SHELL: "/bin/bash", XDG_CONFIG_HOME: join(home.path, ".config") };
    const proc = Bun.spawn(["bash", "deploy/install.sh"], { cwd: REPO_ROOT, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    const bin = join(home.path, ".local", "bin");
    const line = `export PATH="${bin}:$PATH"`;
    expect(stdout).toContain(`serverfs is not on your PATH: ${bin} is not in it, so a new shell would say 'serverfs: command not found'.`);
    const add = `echo '${line}' >> ${join(home.path, ".bashrc")}`;
    expect(stdout).toContain(`\n  ${add}\n`);
    expect(stdout).toContain(`or, in this shell only: ${line}\n`);

    // before: a plain shell does not find it; after the printed line: a new interactive bash does
    const find = () => Bun.spawnSync(["bash", "-ic", "command -v serverfs"], { env, stdin: "ignore", stdout: "pipe", stderr: "ignore" });
    expect(find().exitCode).not.toBe(0);
    expect(Bun.spawnSync(["bash", "-c", add], { env }).exitCode).toBe(0);
    const found = find();
    expect(found.exitCode).toBe(0);
    expect(found.stdout.toString().trim()).toBe(join(bin, "serverfs"));
  }, 120_000);
});
