/**
 * One real `serverfs bridge` for a whole test file: `useBridge(opts)` lays out its temp tree at once
 * (so `env` and `sock` are plain values), registers the `beforeAll` that starts it and the `afterAll`
 * that stops it and removes the tree, and offers the calls every contract test makes against it.
 */
import { afterAll, beforeAll } from "bun:test";
import { type BridgeEnv, type BridgeEnvOptions, type BridgeProcess, bridgeEnv, startBridgeProcess, submitAccepted, waitForTask } from "./bridge.ts";

export type Task = Record<string, unknown>;

export interface UseBridgeOptions extends BridgeEnvOptions {
  /** Runs after the tree is laid out and before the Bridge starts (extra files, a legacy database). */
  prepare?(env: BridgeEnv): void | Promise<void>;
}

export interface BridgeFixture {
  env: BridgeEnv;
  sock: string;
  /** The running process; there from `beforeAll` on. */
  bridge(): BridgeProcess;
  /** Stops the Bridge and starts it again on the same tree; resolves with the stop's exit code. */
  restart(): Promise<number>;
  /** `task.submit` (fake runtime, "repo", review unless `params` says otherwise) that must be accepted; its task id. */
  submit(params: Record<string, unknown>): Promise<string>;
  /** Polls `task.get` until `until(task)` holds. */
  waitFor(taskId: string, until: (t: Task) => boolean, timeoutMs?: number): Promise<Task>;
}

export function useBridge(opts: UseBridgeOptions = {}): BridgeFixture {
  const { prepare, ...envOptions } = opts;
  const env = bridgeEnv(envOptions);
  const sock = env.socketPath;
  let running: BridgeProcess | undefined;

  beforeAll(async () => {
    await prepare?.(env);
    running = await startBridgeProcess(env);
  }, 30_000);
  // a stop may take the Bridge's whole shutdown bound (15 s)
  afterAll(async () => {
    await running?.stop();
    env.dir.remove();
  }, 30_000);

  // plain closures, not methods: a test file destructures them
  const bridge = (): BridgeProcess => {
    if (!running) throw new Error("the Bridge is not started yet (use it inside a test or a later hook)");
    return running;
  };
  return {
    env,
    sock,
    bridge,
    async restart() {
      const code = await bridge().stop();
      running = await startBridgeProcess(env);
      return code;
    },
    submit: (params) => submitAccepted(sock, params),
    waitFor: (taskId, until, timeoutMs) => waitForTask(sock, taskId, until, timeoutMs),
  };
}
