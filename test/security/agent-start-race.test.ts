/**
 * An agent never starts outside its workdir (docs/reliability.md "The Bridge under faults"). While a
 * swapper process exchanges each workdir's start directory `sub` with a symlink to outside as fast as
 * it can, write tasks are submitted for `sub` over the Bridge socket, hundreds of rounds on three
 * workdirs at once. The submit check sees either the real directory or the link; whichever the path
 * names by the time the provider is spawned, the provider runs in the directory verified at submit or
 * not at all (SYMLINK_NOT_ALLOWED). A `/proc` sampler watches every fake provider's working directory
 * for the whole race, and nothing may ever be written outside.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { type BridgeEnv, type BridgeProcess, bridgeEnv, call, codeOf, startBridgeProcess, submitTask, waitForTask } from "../helpers/bridge.ts";
import { BUN, REPO_ROOT, type TempDir, tempDir } from "../helpers/workspace.ts";

const WORKDIRS = 3;
const ROUNDS_PER_WORKDIR = 100;
const SWAP_MS = 600_000; // stopped as soon as the rounds are done

let env: BridgeEnv;
let lab: TempDir;
let bridge: BridgeProcess;
let swapper: ReturnType<typeof Bun.spawn>;
const outsides: string[] = [];
const roots: string[] = [];

/** Every fake provider's working directory, sampled until stopped; records any outside the workdirs. */
function sampleProviderCwds(): { stop(): Promise<{ samples: number; outside: string[] }> } {
  const outside: string[] = [];
  let samples = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const name of readdirSync("/proc")) {
        if (!/^\d+$/.test(name)) continue;
        try {
          if (!readFileSync(`/proc/${name}/cmdline`, "latin1").includes("fake-provider")) continue;
          const cwd = readlinkSync(`/proc/${name}/cwd`);
          samples++;
          if (outsides.some((o) => cwd === o || cwd.startsWith(`${o}/`))) outside.push(cwd);
        } catch {
          // the process went away mid-read
        }
      }
      await Bun.sleep(2);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { samples, outside };
    },
  };
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

beforeAll(async () => {
  // the other workdirs and every outside directory live next to the Bridge's own tree
  lab = tempDir("sfs-race-");
  const extra = [];
  for (let k = 2; k <= WORKDIRS; k++) {
    extra.push({ slot: k, alias: `w${k}`, path: lab.dir(`ws${k}`), read_only: false, agent_mode: "workspace-write", agent_runtimes: ["fake"] });
  }
  env = bridgeEnv({ extraWorkdirs: extra });
  const pairs: string[] = [];
  for (let k = 1; k <= WORKDIRS; k++) {
    const root = k === 1 ? env.workspace : extra[k - 2]!.path;
    roots.push(root);
    const outside = lab.dir(`outside${k}`);
    outsides.push(outside);
    mkdirSync(join(root, "sub"));
    symlinkSync(outside, join(root, "sub-link"));
    pairs.push(join(root, "sub"), join(root, "sub-link"));
  }
  bridge = await startBridgeProcess(env);
  swapper = Bun.spawn({
    cmd: [BUN, join(REPO_ROOT, "test", "fixtures", "symlink-swapper.ts"), String(SWAP_MS), ...pairs],
    stdio: ["ignore", "pipe", "pipe"],
  });
}, 60_000);

afterAll(async () => {
  swapper?.kill("SIGKILL");
  await bridge?.stop();
  env?.dir.remove();
  lab?.remove();
});

describe("the agent's start directory under a swapper", () => {
  test("no provider ever runs outside its workdir: it runs in the verified directory or fails SYMLINK_NOT_ALLOWED", async () => {
    const sampler = sampleProviderCwds();
    const outcomes = new Map<string, number>();
    const problems: string[] = [];
    const note = (what: string) => outcomes.set(what, (outcomes.get(what) ?? 0) + 1);

    const rounds = async (k: number) => {
      const workdir = k === 1 ? "repo" : `w${k}`;
      for (let i = 0; i < ROUNDS_PER_WORKDIR; i++) {
        // the previous task's lease goes at the end of its finally path, just after its terminal state
        let r = await submitTask(env.socketPath, { workdir, path: "sub", profile: "workspace-write", prompt: `write:f${k}-${i}.txt:x` });
        for (let busy = 0; codeOf(r) === "WORKDIR_BUSY" && busy < 500; busy++) {
          await Bun.sleep(20);
          r = await submitTask(env.socketPath, { workdir, path: "sub", profile: "workspace-write", prompt: `write:f${k}-${i}.txt:x` });
        }
        if (!r.ok) {
          const code = codeOf(r)!;
          note(`submit ${code}`);
          // the walk met the link (or, lstat racing the swap, an object of another type): refused either way
          if (code !== "SYMLINK_NOT_ALLOWED" && code !== "INVALID_WORKDIR_PATH") problems.push(`submit: ${code}: ${r.error?.message}`);
          continue;
        }
        const taskId = String(r.result!["task_id"]);
        const t = await waitForTask(env.socketPath, taskId, (x) => ["succeeded", "failed", "cancelled", "interrupted"].includes(String(x["status"])), 30_000);
        const what = `${t["status"]} ${t["error_code"] ?? ""}`.trim();
        note(what);
        if (what !== "succeeded" && what !== "failed SYMLINK_NOT_ALLOWED") problems.push(`task: ${what}: ${t["error_message"]}`);
        if (what === "succeeded" && t["final_response"] !== `wrote=f${k}-${i}.txt`) problems.push(`task: final ${String(t["final_response"])}`);
        const text = JSON.stringify(t);
        if (text.includes(env.dir.path) || text.includes(lab.path)) problems.push("a host path leaked into the task object");
      }
    };
    await Promise.all(Array.from({ length: WORKDIRS }, (_, i) => rounds(i + 1)));
    const watched = await sampler.stop();
    swapper.kill("SIGKILL");
    await swapper.exited;

    const leaked = outsides.flatMap(filesUnder);
    const written = roots.flatMap(filesUnder).filter((f) => /\/f\d+-\d+\.txt$/.test(f));
    console.log(JSON.stringify({ outcomes: Object.fromEntries(outcomes), provider_cwd_samples: watched.samples, written: written.length }));

    expect(problems).toEqual([]);
    expect(watched.outside).toEqual([]);
    expect(leaked).toEqual([]);
    // every succeeded task wrote its file inside, in the directory it was verified on
    expect(written.length).toBe(outcomes.get("succeeded") ?? 0);
    // the premise: the swapper did win races after submit, and tasks still ran
    expect(outcomes.get("failed SYMLINK_NOT_ALLOWED") ?? 0).toBeGreaterThan(0);
    expect(outcomes.get("succeeded") ?? 0).toBeGreaterThan(0);
    expect(watched.samples).toBeGreaterThan(0);
    // the Bridge still serves
    expect(await call(env.socketPath, "runtime.list")).toHaveProperty("runtimes");
  }, 240_000);
});
