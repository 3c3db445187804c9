/**
 * The bounded `<bin> --version` probe behind `runtime.list` (docs/bridge-rpc.md#runtimelist): available when the binary
 * starts and exits 0 within the bound, version = the first `N.N.N` of its output (else null). A missing
 * binary or a timeout is "unavailable", never an error; a probe that outlives its bound is killed.
 *
 * Offers: `probeVersion(command, env, timeoutMs)` → `{available, version}`.
 */

export interface VersionProbe {
  available: boolean;
  version: string | null;
}

const VERSION = /\d+\.\d+\.\d+/;

export async function probeVersion(command: readonly string[], env: Readonly<Record<string, string | undefined>>, timeoutMs: number): Promise<VersionProbe> {
  let child: Bun.Subprocess<"ignore", "pipe", "ignore">;
  try {
    child = Bun.spawn({ cmd: [...command], env: { ...env }, stdin: "ignore", stdout: "pipe", stderr: "ignore" });
  } catch {
    return { available: false, version: null };
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), timeoutMs);
  });
  const finished = Promise.all([new Response(child.stdout).text(), child.exited]);
  const done = await Promise.race([finished, timedOut]);
  clearTimeout(timer);
  if (done === null) {
    child.kill("SIGKILL");
    return { available: false, version: null };
  }
  const [output, code] = done;
  if (code !== 0) return { available: false, version: null };
  return { available: true, version: VERSION.exec(output)?.[0] ?? null };
}
